//! Compile-time lowering of Rust functions to kernels: what `#[kernel]`, `#[fused_grad]`
//! and `#[kernels] mod` do, as a library (so it can be tested without a compiler).
//!
//! [`expand_kernel`] and [`expand_kernels`] take the macro's attribute and item tokens and
//! return the expansion. They never panic and always return tokens: the function and the
//! items generated beside it, or, when something is not supported, the function unchanged
//! (minus `#[uniform]` markers) followed by one `compile_error!` per problem, each spanned
//! at the offending code, all reported at once.
//!
//! The pipeline for one function: check the signature, lower the body to a
//! [`Graph`](crate::Graph) (every node remembers the span of the expression it came
//! from), simplify, differentiate for `#[fused_grad]`, emit WGSL and validate it with naga
//! ([`crate::emit_elementwise`], [`crate::fused_grad_kernels`]), then generate the Rust
//! items (`WGSL`, `KERNEL`, `launch`, and `GRAD`, `VJP`, `launch_grad`, `launch_vjp`,
//! `grad`, `vjp`). The language accepted is documented in the `tang-macros` crate.
//!
//! ```
//! use tang_expr::lower::{Mode, compile_kernel};
//!
//! let item: proc_macro2::TokenStream = "fn square(x: f32) -> f32 { x * x }".parse().unwrap();
//! let done = compile_kernel(Default::default(), item, Mode::FusedGrad).unwrap();
//! assert_eq!(done.kernels.len(), 3); // value, GRAD, VJP
//! assert!(done.tokens.to_string().contains("pub fn grad"));
//! ```

mod assign;
mod body;
mod builtins;
mod control;
mod emit;
mod env;
mod errors;
mod expr;
mod sig;
mod twin;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::{FnArg, Item, ItemFn};

use self::body::{FnTable, Lowerer};
use self::errors::Errors;
use self::sig::{ParamKind, is_lint_attr};
use crate::codegen::{ElementwiseSpec, emit_elementwise};
use crate::error::ExprError;
use crate::fused::{FusedSpec, fused_grad_kernels};
use crate::kernel::Kernel;
use crate::simplify::simplify;

/// Which macro is expanding a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `#[kernel]`: the value kernel only (`WGSL`, `KERNEL`, `launch`).
    Kernel,
    /// `#[fused_grad]`: also `GRAD`, `VJP`, their launchers and the CPU twins.
    FusedGrad,
}

/// A successfully compiled kernel function.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The expansion: the function (without `#[uniform]` markers) and `mod f { ... }`.
    pub tokens: TokenStream,
    /// The naga-validated kernels: the value kernel, then (for `#[fused_grad]`) GRAD and VJP.
    pub kernels: Vec<Kernel>,
    /// Nodes in the lowered graph before simplification (a measure of the kernel's size).
    pub nodes: usize,
}

/// Compiles one function, as `#[kernel]` (or `#[fused_grad]`, by `mode`) would.
///
/// # Errors
/// Every unsupported construct, as one combined [`syn::Error`] (each part spanned at the
/// offending code), or a shader naga rejects (spanned at the function's name).
pub fn compile_kernel(
    attr: TokenStream,
    item: TokenStream,
    mode: Mode,
) -> Result<Compiled, syn::Error> {
    let f: ItemFn = match syn::parse2::<Item>(item)? {
        Item::Fn(f) => f,
        other => return Err(not_a_function(&other, mode)),
    };
    let mut fns = FnTable::new();
    fns.insert(f.sig.ident.unraw().to_string(), &f);
    match compile_fn(&f, mode, attr, &fns) {
        Ok(out) => {
            let cleaned = clean(&f);
            let module = out.module;
            Ok(Compiled {
                tokens: quote!(#cleaned #module),
                kernels: out.kernels,
                nodes: out.nodes,
            })
        }
        Err(e) => Err(e
            .combined()
            .unwrap_or_else(|| syn::Error::new(f.sig.ident.span(), "kernel compilation failed"))),
    }
}

/// The expansion of `#[kernel]` / `#[fused_grad]` on `item`: never panics; on error, the
/// item unchanged (minus `#[uniform]` markers) plus `compile_error!`s.
pub fn expand_kernel(attr: TokenStream, item: TokenStream, mode: Mode) -> TokenStream {
    match compile_kernel(attr, item.clone(), mode) {
        Ok(done) => done.tokens,
        Err(e) => {
            let original = match syn::parse2::<Item>(item.clone()) {
                Ok(Item::Fn(f)) => clean(&f).into_token_stream(),
                _ => item,
            };
            let errors = e.to_compile_error();
            quote!(#original #errors)
        }
    }
}

/// The expansion of `#[kernels]` on a `mod { ... }`: every function in it marked
/// `#[kernel]` or `#[fused_grad]` is compiled, and may call (inlined) any function of the
/// module. Other items are left as they are.
pub fn expand_kernels(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    if !attr.is_empty() {
        errors.at(&attr, "`#[kernels]` takes no arguments");
    }
    let module: syn::ItemMod = match syn::parse2(item.clone()) {
        Ok(m) => m,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "`#[kernels]` applies to an inline module: `#[kernels] mod name { ... }`",
            )
            .to_compile_error();
            return quote!(#item #e);
        }
    };
    let Some((_, items)) = &module.content else {
        errors.at(
            &module,
            "`#[kernels]` needs the module's items inline: `#[kernels] mod name { ... }`",
        );
        let e = errors.combined().map(|e| e.to_compile_error());
        return quote!(#module #e);
    };
    let mut fns = FnTable::new();
    for it in items {
        if let Item::Fn(f) = it {
            fns.insert(f.sig.ident.unraw().to_string(), f);
        }
    }
    let mut out = TokenStream::new();
    for it in items {
        let Item::Fn(f) = it else {
            it.to_tokens(&mut out);
            continue;
        };
        let Some((mode, attr, rest)) = kernel_attr(f, &mut errors) else {
            f.to_tokens(&mut out);
            continue;
        };
        let mut cleaned = clean(f);
        cleaned.attrs = rest;
        cleaned.to_tokens(&mut out);
        match compile_fn(f, mode, attr, &fns) {
            Ok(done) => out.extend(done.module),
            Err(e) => errors.extend(e),
        }
    }
    let attrs = &module.attrs;
    let vis = &module.vis;
    let unsafety = &module.unsafety;
    let name = &module.ident;
    let errors = errors.combined().map(|e| e.to_compile_error());
    quote! {
        #(#attrs)* #vis #unsafety mod #name {
            #out
        }
        #errors
    }
}

/// The expansion of `#[uniform]` anywhere the kernel macros did not consume it.
pub fn expand_misplaced_uniform(item: TokenStream) -> TokenStream {
    let e = syn::Error::new(
        Span::call_site(),
        "`#[uniform]` marks a parameter of a `#[kernel]` or `#[fused_grad]` function \
         (`#[uniform] lr: f32`: one value for the whole launch); it cannot be used here",
    )
    .to_compile_error();
    quote!(#item #e)
}

fn not_a_function(item: &Item, mode: Mode) -> syn::Error {
    let name = match mode {
        Mode::Kernel => "kernel",
        Mode::FusedGrad => "fused_grad",
    };
    syn::Error::new_spanned(
        item,
        format!("`#[{name}]` applies to a function: `#[{name}] fn f(x: f32) -> f32 {{ ... }}`"),
    )
}

/// Which kernel macro marks `f` inside a `#[kernels] mod`, its arguments, and `f`'s other
/// attributes.
fn kernel_attr(
    f: &ItemFn,
    errors: &mut Errors,
) -> Option<(Mode, TokenStream, Vec<syn::Attribute>)> {
    let mut found = None;
    let mut rest = Vec::new();
    for attr in &f.attrs {
        let last = attr.path().segments.last().map(|s| s.ident.to_string());
        let mode = match last.as_deref() {
            Some("kernel") => Mode::Kernel,
            Some("fused_grad") => Mode::FusedGrad,
            _ => {
                rest.push(attr.clone());
                continue;
            }
        };
        let args = match &attr.meta {
            syn::Meta::Path(_) => TokenStream::new(),
            syn::Meta::List(l) => l.tokens.clone(),
            syn::Meta::NameValue(nv) => {
                errors.at(nv, "write `#[fused_grad(wrt(x))]`, not `= ...`");
                TokenStream::new()
            }
        };
        if found.is_some() {
            errors.at(
                attr,
                "a function takes one of `#[kernel]` and `#[fused_grad]`, once",
            );
            continue;
        }
        found = Some((mode, args));
    }
    found.map(|(m, a)| (m, a, rest))
}

/// The function as the CPU sees it: `#[uniform]` (and any other non-lint parameter
/// attribute, already reported) removed, since rustc does not accept them on parameters.
fn clean(f: &ItemFn) -> ItemFn {
    let mut f = f.clone();
    for arg in f.sig.inputs.iter_mut() {
        if let FnArg::Typed(pt) = arg {
            pt.attrs.retain(is_lint_attr);
        }
    }
    f
}

struct FnOutput {
    module: TokenStream,
    kernels: Vec<Kernel>,
    nodes: usize,
}

fn describe(e: &ExprError) -> String {
    match e {
        ExprError::BadName(n) => format!(
            "`{n}` cannot name a kernel buffer: names must be unique ASCII identifiers (outputs \
             are named `out` or `out0, out1, ...`, partials `d_<output>_<input>`, upstream \
             gradients `g_<output>`); rename the parameter"
        ),
        ExprError::Invalid(v) => format!("naga rejected the generated shader: {v}"),
        other => format!("the kernel could not be built: {other}"),
    }
}

fn compile_fn(
    f: &ItemFn,
    mode: Mode,
    attr: TokenStream,
    fns: &FnTable,
) -> Result<FnOutput, Errors> {
    let mut errors = Errors::default();
    let wrt = sig::parse_attr(attr, &mode, &mut errors);
    let sig = sig::check_signature(&f.sig, &mode, &wrt, &mut errors);
    let name = f.sig.ident.unraw().to_string();
    let mut lw = Lowerer::new(&name, fns);
    let lowered = lw.kernel_body(&sig.params, &sig.rejected, sig.ret, &f.block);
    errors.extend(std::mem::take(&mut lw.errors));
    if !errors.is_empty() {
        return Err(errors);
    }
    let nodes = lw.g.len();
    let param_name = |k: ParamKind| -> Vec<String> {
        sig.params
            .iter()
            .filter(|p| p.kind == k)
            .map(|p| p.ident.unraw().to_string())
            .collect()
    };
    let inputs = param_name(ParamKind::Input);
    let uniforms = param_name(ParamKind::Uniform);
    let inout_names = param_name(ParamKind::InOut);
    let outputs: Vec<(String, crate::NodeId)> = sig
        .ret
        .output_names()
        .into_iter()
        .zip(lowered.outputs.iter().copied())
        .collect();
    let fail = |e: ExprError| {
        let mut errs = Errors::default();
        errs.span(f.sig.ident.span(), describe(&e));
        errs
    };
    let (value, fused) = match mode {
        Mode::Kernel => {
            let roots: Vec<crate::NodeId> = lowered
                .inouts
                .iter()
                .chain(&lowered.outputs)
                .copied()
                .collect();
            let (g, r) = simplify(&lw.g, &roots);
            let n_io = lowered.inouts.len();
            let spec = ElementwiseSpec {
                name: name.clone(),
                graph: &g,
                inputs,
                uniforms,
                inouts: inout_names.into_iter().zip(r.iter().copied()).collect(),
                outputs: outputs
                    .iter()
                    .map(|(n, _)| n.clone())
                    .zip(r.iter().skip(n_io).copied())
                    .collect(),
            };
            (emit_elementwise(&spec).map_err(fail)?, None)
        }
        Mode::FusedGrad => {
            let fk = fused_grad_kernels(&FusedSpec {
                name: name.clone(),
                graph: &lw.g,
                inputs,
                uniforms,
                outputs,
                wrt: sig.wrt.clone(),
            })
            .map_err(fail)?;
            (fk.value.clone(), Some(fk))
        }
    };
    let module = emit::module(&f.vis, &sig, &value, fused.as_ref()).map_err(|e| {
        let mut errs = Errors::default();
        errs.span(f.sig.ident.span(), e);
        errs
    })?;
    let mut kernels = vec![value];
    if let Some(fk) = fused {
        kernels.push(fk.grad);
        kernels.push(fk.vjp);
    }
    Ok(FnOutput {
        module,
        kernels,
        nodes,
    })
}

#[cfg(test)]
mod tests;
