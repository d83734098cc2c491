//! The update kernels stay PyTorch's arithmetic on a GPU whose compiler contracts a
//! product and a sum into one fused multiply-add (NVIDIA's does; lavapipe's does not, so
//! the parity tests alone pass there whatever the kernels' form).
//!
//! The check reads each kernel's generated WGSL, which is in SSA form (`let vN = (a * b);`),
//! and finds every sum or difference with an operand that is a product or a quotient (or
//! its negation): a place where a contracting compiler may skip the product's rounding.
//! The kernels multiply such a product by `one` (a uniform holding 1) before adding it,
//! and a contraction of that multiplication is exact (`fma(x, 1, y)` is the rounded
//! `x + y`), so a product with `params.u_one` as a factor is safe. Explicit `fma` calls
//! are what PyTorch fuses, and quotients are treated as products because a compiler may
//! lower `a / b` to `a * (1 / b)`.

use std::collections::HashMap;

use tang_nn::optim::kernels;
use tang_nn::tang_runtime::KernelDesc;

/// The operands of a parenthesised binary expression `(a op b)` at top level.
fn binary(expr: &str) -> Option<(&str, char, &str)> {
    let inner = expr.strip_prefix('(')?.strip_suffix(')')?;
    let mut depth = 0i32;
    for (i, c) in inner.char_indices() {
        match c {
            '(' | '<' => depth += 1,
            ')' | '>' => depth -= 1,
            '+' | '-' | '*' | '/' if depth == 0 && i > 0 => {
                let (l, r) = (inner[..i].trim(), inner[i + 1..].trim());
                if !l.is_empty() && !r.is_empty() && inner[..i].ends_with(' ') {
                    return Some((l, c, r));
                }
            }
            _ => {}
        }
    }
    None
}

/// Every `let` of the WGSL, and every assignment of a block's result (`v7 = v6;` in the
/// arms of an `if` on a uniform condition): name and expression.
fn lets(wgsl: &str) -> Vec<(&str, &str)> {
    wgsl.lines()
        .filter_map(|l| {
            let line = l.trim();
            let rest = line.strip_prefix("let ").or_else(|| {
                let digits = line.strip_prefix('v')?;
                digits
                    .starts_with(|c: char| c.is_ascii_digit())
                    .then_some(line)
            })?;
            let (name, expr) = rest.split_once(" = ")?;
            Some((name.trim(), expr.trim().strip_suffix(';')?))
        })
        .collect()
}

/// The sums of `wgsl` that a contracting compiler could fuse with an unrounded product,
/// as `sum = expression` lines.
fn contraction_hazards(wgsl: &str) -> Vec<String> {
    let lets = lets(wgsl);
    // Whether each value is a product or quotient whose rounding a contraction could skip.
    let mut unrounded: HashMap<&str, bool> = HashMap::new();
    let mut hazards = Vec::new();
    for (name, expr) in &lets {
        let is_unrounded = |operand: &str| unrounded.get(operand).copied().unwrap_or(false);
        let value = if let Some(inner) = expr.strip_prefix("(-").and_then(|e| e.strip_suffix(')')) {
            is_unrounded(inner.trim())
        } else {
            match binary(expr) {
                Some((l, '*', r)) => !(l.contains("params.u_one") || r.contains("params.u_one")),
                Some((_, '/', _)) => true,
                Some((l, '+' | '-', r)) => {
                    if is_unrounded(l) || is_unrounded(r) {
                        hazards.push(format!("{name} = {expr}"));
                    }
                    false
                }
                // A plain name: a block's result takes its arm's value.
                _ => is_unrounded(expr),
            }
        };
        // A block's result is assigned once per arm: unrounded if either arm's is.
        *unrounded.entry(name).or_insert(false) |= value;
    }
    hazards
}

#[test]
fn no_update_kernel_adds_a_product_that_a_compiler_could_fuse() {
    let all: [&KernelDesc; 9] = [
        &kernels::sgd_update::KERNEL,
        &kernels::sgd_momentum_update::KERNEL,
        &kernels::adam_update::KERNEL,
        &kernels::adam_amsgrad_update::KERNEL,
        &kernels::square::KERNEL,
        &kernels::norm_from_sum_of_squares::KERNEL,
        &kernels::clip_coefficient::KERNEL,
        &kernels::scale_in_place::KERNEL,
        &kernels::copy_state::KERNEL,
    ];
    let mut found = Vec::new();
    for k in all {
        assert!(lets(k.wgsl()).len() > 1, "{}: no SSA lets found", k.name());
        for h in contraction_hazards(k.wgsl()) {
            found.push(format!("{}: {h}", k.name()));
        }
    }
    assert!(found.is_empty(), "contractible sums:\n{}", found.join("\n"));
}

#[test]
fn the_check_finds_a_contractible_sum() {
    // A kernel of the form the check rejects: a decay product added to a step, as
    // AdamW's update once was (NVIDIA fused the two).
    let wgsl = "let v1 = (x * d);\nlet v2 = (-v1);\nlet v3 = (v2 + s);\nlet v4 = (vec4<f32>(params.u_one) * v1);\nlet v5 = (v4 + s);\nlet v6 = (x / y);\nlet v7 = (s - v6);";
    assert_eq!(lets(wgsl).len(), 7);
    assert_eq!(
        contraction_hazards(wgsl),
        ["v3 = (v2 + s)", "v7 = (s - v6)"]
    );
    // Through a block's result: an arm's unrounded product is the result's.
    let block = "var v9: vec4<f32>;\nif (all(c)) {\n    let v1 = (x * d);\n    v9 = v1;\n} else {\n    v9 = s;\n}\nlet v10 = (v9 + s);";
    assert_eq!(contraction_hazards(block), ["v10 = (v9 + s)"]);
}
