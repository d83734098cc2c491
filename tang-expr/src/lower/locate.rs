//! Pointing a shader naga rejects back at the Rust expression that produced it.
//!
//! Every node of the lowered graph remembers the code it came from (`Lowerer::spans`).
//! When naga rejects a kernel, the unsimplified graph is emitted once more: its WGSL
//! names each value after its node (`let v12 = ...`), naga's message quotes the offending
//! line, and so the node, and so the expression, is found. Simplification only removes
//! and folds nodes, so a rejection of the simplified kernel reproduces on the original
//! (if it does not, the error stays at the function's name).

use super::site::SpanRange;
use crate::codegen::{ElementwiseSpec, emit_elementwise};
use crate::error::ExprError;

/// The code of the node naga rejects in the kernel of `raw` (the lowered, unsimplified
/// graph), with naga's message; `None` if naga accepts it or names no node.
pub(crate) fn rejected_expression(
    raw: &ElementwiseSpec<'_>,
    spans: &[Option<SpanRange>],
) -> Option<(SpanRange, String)> {
    let Err(ExprError::Invalid(e)) = emit_elementwise(raw) else {
        return None;
    };
    let node = node_in_message(&e.message)?;
    let site = spans.get(node).copied().flatten()?;
    // The first line says what is wrong; the rest quotes WGSL the user never wrote.
    let first = e.message.lines().next().unwrap_or_default();
    Some((site, first.trim_start_matches("error: ").to_string()))
}

/// The node whose `let v<N> = ...` line naga's message quotes.
fn node_in_message(message: &str) -> Option<usize> {
    message.lines().find_map(|line| {
        let rest = &line[line.find("let v")? + "let v".len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_quoted_node() {
        let msg = "error: bad\n  ┌─ wgsl:20:14\n   │\n20 │     let v17 = (v3 * v4);\n   │ ^^^";
        assert_eq!(node_in_message(msg), Some(17));
        assert_eq!(node_in_message("error: no location"), None);
    }

    #[test]
    fn a_rejected_constant_expression_is_reported_at_it() {
        // naga's constant evaluator rejects the infinite product.
        let src = "fn f(x: f32) -> f32 { x + 3e38 * 10.0 }";
        let item = src.parse().unwrap_or_default();
        let e = super::super::compile_kernel(Default::default(), item, super::super::Mode::Kernel)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "naga rejected the shader generated for this expression: Float literal is infinite"
        );
    }
}
