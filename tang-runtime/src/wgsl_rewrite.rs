//! Rewrites of a kernel's WGSL text by binding: where a binding is declared, read and
//! written (`name[i]`, `name[i] = v;`), and the rewrite of its accesses into converting
//! functions (`ld_name(i)`, `st_name(i, v)`). The f16 forms of the row kernels
//! (`ops/rows/half.rs`) and of the generated elementwise kernels
//! ([`elementwise_f16_inputs`], chosen by the launch) are built with them.

use crate::cast::F16_BITS_TO_F32_WGSL;

/// Exact f16 -> f32 widening of one half (the low 16 bits) and of the four halves of a word
/// pair (after [`F16_BITS_TO_F32_WGSL`]).
pub(crate) const WIDEN_F16_WGSL: &str = "fn widen_half(h: u32) -> f32 { return bitcast<f32>(f16_bits_to_f32(h & 0xffffu)); }
fn widen_f16(w: u32, gi: u32) -> f32 { return widen_half(w >> (16u * (gi & 1u))); }
fn widen_f16x4(w: vec2<u32>) -> vec4<f32> { return vec4<f32>(widen_half(w.x), widen_half(w.x >> 16u), widen_half(w.y), widen_half(w.y >> 16u)); }
";

/// The storage bindings of a kernel's text, in binding order: `(name, WGSL type)`.
pub(crate) fn bindings(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("var<storage, ") {
        rest = &rest[at..];
        let decl = rest.split(';').next().unwrap_or("");
        let after = decl.split_once("> ").map_or("", |(_, a)| a);
        if let Some((name, ty)) = after.split_once(": ") {
            out.push((name, ty));
        }
        rest = &rest[decl.len().max(1)..];
    }
    out
}

/// Where `name[` starts an access in `text` at or after `from`: not part of a longer name.
fn find_access(text: &str, name: &str, from: usize) -> Option<usize> {
    let pat = format!("{name}[");
    let mut at = from;
    while let Some(i) = text[at..].find(&pat) {
        let i = at + i;
        let before = text[..i].chars().next_back();
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            return Some(i);
        }
        at = i + pat.len();
    }
    None
}

/// The index of the bracket closing the one at `open`, or of the `;` ending a statement
/// that starts at `open` (`close` = `;`), at depth 0 of `()` and `[]`.
fn closing(text: &str, open: usize, close: u8) -> usize {
    let mut depth = 0i32;
    for (i, b) in text.bytes().enumerate().skip(open) {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => {
                depth -= 1;
                if depth == 0 && close == b']' {
                    return i;
                }
            }
            b';' if depth == 0 && close == b';' => return i,
            _ => {}
        }
    }
    text.len()
}

/// Whether `text` writes binding `name` (`name[i] = v;`).
pub(crate) fn writes(text: &str, name: &str) -> bool {
    let mut at = 0;
    while let Some(i) = find_access(text, name, at) {
        let end = closing(text, i + name.len(), b']');
        if is_store(&text[end + 1..]) {
            return true;
        }
        at = end;
    }
    false
}

/// Whether `rest` (the text after an access) assigns to it.
fn is_store(rest: &str) -> bool {
    let rest = rest.trim_start();
    rest.starts_with('=') && !rest.starts_with("==")
}

/// `text` with every access of binding `name` rewritten to its converting function.
pub(crate) fn rewrite(text: &str, name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(i) = find_access(text, name, at) {
        out.push_str(&text[at..i]);
        let open = i + name.len();
        let end = closing(text, open, b']');
        let index = rewrite(&text[open + 1..end.min(text.len())], name);
        let rest = &text[(end + 1).min(text.len())..];
        if is_store(rest) {
            let eq = end + 1 + rest.find('=').unwrap_or(0);
            let semi = closing(text, eq + 1, b';');
            let value = rewrite(text[eq + 1..semi].trim(), name);
            out.push_str(&format!("st_{name}({index}, {value})"));
            at = semi;
        } else {
            out.push_str(&format!("ld_{name}({index})"));
            at = (end + 1).min(text.len());
        }
    }
    out.push_str(&text[at..]);
    out
}

/// The form of a generated elementwise kernel (tang-expr's layout: every tensor binding an
/// `array<vec4<f32>>`) that reads its inputs `inputs` (their positions among the inputs,
/// which come first in binding order) from f16 tensors: each such binding becomes word
/// pairs (four halves), read through `ld_<name>` and widened exactly; the arithmetic and
/// every other binding stay f32. An f32 launch with f16 inputs (PyTorch's promotion,
/// `f16 + f32 -> f32`) reads them this way instead of casting them to f32 first.
pub(crate) fn elementwise_f16_inputs(name: &str, text: &str, inputs: &[usize]) -> (String, String) {
    let all = bindings(text);
    let mut out = text.to_string();
    let mut helpers = format!("{F16_BITS_TO_F32_WGSL}{WIDEN_F16_WGSL}");
    for &i in inputs {
        let Some(&(binding, ty)) = all.get(i) else {
            continue;
        };
        let decl = (
            format!("> {binding}: {ty};"),
            format!("> {binding}: array<vec2<u32>>;"),
        );
        out = rewrite(&out.replacen(&decl.0, &decl.1, 1), binding);
        helpers.push_str(&format!(
            "fn ld_{binding}(i: u32) -> vec4<f32> {{ return widen_f16x4({binding}[i]); }}\n"
        ));
    }
    out.push('\n');
    out.push_str(&helpers);
    let mask: String = inputs.iter().map(|i| format!("_{i}")).collect();
    (format!("{name}_f16_inputs{mask}"), out)
}
