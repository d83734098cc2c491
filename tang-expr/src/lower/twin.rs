//! CPU twins: Rust code emitted from a simplified graph, one `let` per node, each calling
//! the op's own f32 evaluation, so the twin computes exactly what the IR defines without
//! building a graph at run time.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;

use crate::graph::{Graph, Node, NodeId};
use crate::op::Op;

/// The tokens naming `op` as a value of `tang_expr::Op`.
fn op_tokens(op: Op) -> TokenStream {
    match op {
        Op::PowI(i32::MIN) => quote!(PowI(i32::MIN)),
        Op::PowI(n) if n < 0 => {
            let m = Literal::i32_suffixed(-n);
            quote!(PowI(-#m))
        }
        Op::PowI(n) => {
            let n = Literal::i32_suffixed(n);
            quote!(PowI(#n))
        }
        other => {
            let name = Ident::new(&format!("{other:?}"), Span::call_site());
            quote!(#name)
        }
    }
}

/// Statements computing `roots` in `g`, and the expression of each root. `leaf` gives
/// the tokens of an input or uniform node (a parameter's name); `f64` picks the precision
/// (the f32 twins match the GPU; the f64 one is a reference for finite differences).
pub(crate) fn twin_body(
    g: &Graph,
    roots: &[NodeId],
    leaf: &dyn Fn(Node) -> Option<TokenStream>,
    f64: bool,
) -> Option<(TokenStream, Vec<TokenStream>)> {
    let ty = if f64 { quote!(f64) } else { quote!(f32) };
    let (one, zero) = if f64 {
        (quote!(1.0f64), quote!(0.0f64))
    } else {
        (quote!(1.0f32), quote!(0.0f32))
    };
    let live = g.reachable(roots);
    let mut names: Vec<TokenStream> = vec![TokenStream::new(); g.len()];
    let mut body = TokenStream::new();
    for (id, node) in g.ids().zip(g.nodes()) {
        if !live.get(id.index()).copied().unwrap_or(false) {
            continue;
        }
        let expr = match *node {
            Node::Input(_) | Node::Uniform(_) => leaf(*node)?,
            Node::Const(bits) => {
                let bits = Literal::u32_suffixed(bits);
                if f64 {
                    quote!((f32::from_bits(#bits) as f64))
                } else {
                    quote!(f32::from_bits(#bits))
                }
            }
            Node::Bool(b) => {
                if b {
                    one.clone()
                } else {
                    zero.clone()
                }
            }
            Node::Apply(op, _) => {
                let args: Vec<&TokenStream> = node
                    .args()
                    .iter()
                    .map(|a| names.get(a.index()))
                    .collect::<Option<_>>()?;
                let op = op_tokens(op);
                let v = Ident::new(&format!("v{}", id.index()), Span::call_site());
                body.extend(quote! {
                    let #v: #ty = ::tang_runtime::tang_expr::Op::#op.eval::<#ty>(&[#(#args),*]);
                });
                quote!(#v)
            }
        };
        if let Some(slot) = names.get_mut(id.index()) {
            *slot = expr;
        }
    }
    let exprs = roots
        .iter()
        .map(|r| names.get(r.index()).cloned())
        .collect::<Option<Vec<_>>>()?;
    Some((body, exprs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_let_per_operation() {
        let mut g = Graph::new();
        let x = g.input(0);
        let two = g.constant(2.0);
        let y = g.apply(Op::Mul, &[x, two]).unwrap();
        let z = g.apply(Op::PowI(-3), &[y]).unwrap();
        let (body, roots) = twin_body(
            &g,
            &[z, x],
            &|n| match n {
                Node::Input(0) => Some(quote!(x)),
                _ => None,
            },
            false,
        )
        .unwrap();
        let text = body.to_string();
        assert_eq!(text.matches("let").count(), 2, "{text}");
        assert!(text.contains("PowI (- 3i32)"), "{text}");
        assert!(text.contains("f32 :: from_bits (1073741824u32)"), "{text}");
        assert_eq!(roots[1].to_string(), "x");
        // A leaf the caller does not know is a failure, not a panic.
        let u = g.uniform(0);
        assert!(twin_body(&g, &[u], &|_| None, false).is_none());
        let (body, _) = twin_body(&g, &[y], &|_| Some(quote!(x)), true).unwrap();
        assert!(body.to_string().contains("eval :: < f64 >"));
    }
}
