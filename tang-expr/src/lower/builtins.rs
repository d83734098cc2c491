//! The `f32` methods, associated functions and constants the kernel language knows.

use crate::op::{ALL_OPS, Op, Provider};

/// The table's method `name` taking `args` arguments besides the receiver (`powi`, whose
/// argument is an integer, is read by the lowering itself).
fn table_method(name: &str, args: usize) -> Option<Op> {
    ALL_OPS.iter().copied().find(|op| {
        !matches!(op, Op::PowI(_))
            && op.arity() == args + 1
            && op.method().is_some_and(|m| m.name == name)
    })
}

/// Methods with no argument besides the receiver.
pub(crate) fn unary_method(name: &str) -> Option<Op> {
    table_method(name, 0)
}

/// Methods with one float argument besides the receiver.
pub(crate) fn binary_method(name: &str) -> Option<Op> {
    table_method(name, 1)
}

/// Methods with two float arguments besides the receiver.
pub(crate) fn ternary_method(name: &str) -> Option<Op> {
    table_method(name, 2)
}

/// Methods the lowering rewrites into other ops (`x.is_nan()` is `x != x`).
const REWRITTEN_METHODS: &[&str] = &["is_nan"];

/// What an unknown method's error lists: the table's methods, Rust's own first.
pub(crate) struct MethodList;

/// The list [`MethodList`] prints.
pub(crate) static METHODS: MethodList = MethodList;

impl MethodList {
    /// The methods of `provider` in table order (and, for Rust's, the rewritten ones).
    pub(crate) fn names(provider: Provider) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = ALL_OPS
            .iter()
            .filter_map(|op| op.method())
            .filter(|m| m.provider == provider)
            .map(|m| m.name)
            .collect();
        if provider == Provider::Std {
            names.extend(REWRITTEN_METHODS);
        }
        names
    }
}

impl std::fmt::Display for MethodList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, and (through `tang_runtime::StableExt`) {}",
            Self::names(Provider::Std).join(", "),
            Self::names(Provider::StableExt).join(", ")
        )
    }
}

/// `std::f32::consts::NAME` and the associated constants `f32::NAME`.
fn named_constant(name: &str) -> Option<f32> {
    use std::f32::consts as c;
    Some(match name {
        "PI" => c::PI,
        "TAU" => c::TAU,
        "E" => c::E,
        "SQRT_2" => c::SQRT_2,
        "LN_2" => c::LN_2,
        "LN_10" => c::LN_10,
        "LOG2_E" => c::LOG2_E,
        "LOG10_E" => c::LOG10_E,
        "LOG2_10" => c::LOG2_10,
        "LOG10_2" => c::LOG10_2,
        "FRAC_PI_2" => c::FRAC_PI_2,
        "FRAC_PI_3" => c::FRAC_PI_3,
        "FRAC_PI_4" => c::FRAC_PI_4,
        "FRAC_PI_6" => c::FRAC_PI_6,
        "FRAC_PI_8" => c::FRAC_PI_8,
        "FRAC_1_PI" => c::FRAC_1_PI,
        "FRAC_2_PI" => c::FRAC_2_PI,
        "FRAC_2_SQRT_PI" => c::FRAC_2_SQRT_PI,
        "FRAC_1_SQRT_2" => c::FRAC_1_SQRT_2,
        _ => return None,
    })
}

fn associated_constant(name: &str) -> Option<f32> {
    Some(match name {
        "EPSILON" => f32::EPSILON,
        "MAX" => f32::MAX,
        "MIN" => f32::MIN,
        "MIN_POSITIVE" => f32::MIN_POSITIVE,
        "INFINITY" => f32::INFINITY,
        "NEG_INFINITY" => f32::NEG_INFINITY,
        "NAN" => f32::NAN,
        _ => return None,
    })
}

/// The value of a constant path: `std::f32::consts::PI`, `core::f32::consts::E`,
/// `f32::consts::TAU`, `f32::EPSILON`, `std::f32::MAX`, ...
pub(crate) fn constant(segments: &[String]) -> Option<f32> {
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    let rest = match s.as_slice() {
        ["std" | "core", rest @ ..] => rest,
        rest => rest,
    };
    match rest {
        ["f32", "consts", name] => named_constant(name),
        ["f32", name] => associated_constant(name),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        p.split("::").map(String::from).collect()
    }

    #[test]
    fn constants_and_methods() {
        assert_eq!(
            constant(&path("std::f32::consts::PI")),
            Some(std::f32::consts::PI)
        );
        assert_eq!(
            constant(&path("core::f32::consts::E")),
            Some(std::f32::consts::E)
        );
        assert_eq!(
            constant(&path("f32::consts::TAU")),
            Some(std::f32::consts::TAU)
        );
        assert_eq!(constant(&path("f32::EPSILON")), Some(f32::EPSILON));
        assert_eq!(constant(&path("f64::consts::PI")), None);
        assert_eq!(constant(&path("std::f32::consts::PIE")), None);
        assert_eq!(unary_method("exp"), Some(Op::Exp));
        assert_eq!(binary_method("max"), Some(Op::Max));
        assert_eq!(ternary_method("clamp"), Some(Op::Clamp));
        assert_eq!(unary_method("expp"), None);
        assert_eq!(unary_method("powi"), None, "powi's argument is an integer");
        assert_eq!(binary_method("powi"), None);
        assert_eq!(unary_method("erf"), Some(Op::Erf));
        assert_eq!(binary_method("atan2"), Some(Op::Atan2));
    }

    /// Every table op with a method is reachable through the lookup, with its arity.
    #[test]
    fn every_method_of_the_table_is_found() {
        for &op in ALL_OPS {
            let (Some(m), false) = (op.method(), matches!(op, Op::PowI(_))) else {
                continue;
            };
            let found = [unary_method, binary_method, ternary_method][op.arity() - 1](m.name);
            assert_eq!(found, Some(op), "{}", m.name);
        }
    }

    /// The backticked, space-separated list that follows `marker` in `text`.
    fn list_after<'a>(text: &'a str, marker: &str) -> Vec<&'a str> {
        let at = text
            .find(marker)
            .unwrap_or_else(|| panic!("`{marker}` not found"));
        let rest = &text[at + marker.len()..];
        let start = rest.find('`').map_or(0, |i| i + 1);
        let len = rest[start..].find('`').unwrap_or(0);
        rest[start..start + len].split_whitespace().collect()
    }

    /// The macro docs' language lists are built from `kernel_methods_doc!`, which lists
    /// the table's methods (plus the rewritten ones, written after it in the docs).
    #[test]
    fn macro_docs_list_the_tables_methods() {
        let std: Vec<&str> = crate::op::KERNEL_METHODS_DOC
            .0
            .split_whitespace()
            .chain(REWRITTEN_METHODS.iter().copied())
            .collect();
        assert_eq!(std, MethodList::names(Provider::Std));
        let ext: Vec<&str> = crate::op::KERNEL_METHODS_DOC.1.split_whitespace().collect();
        assert_eq!(ext, MethodList::names(Provider::StableExt));
        let docs = include_str!("../../../tang-macros/src/lib.rs");
        let rewritten = format!(
            "kernel_methods_doc!(std),\n    \"{}`",
            REWRITTEN_METHODS.join(" ")
        );
        assert!(
            docs.contains(&rewritten),
            "tang-macros/src/lib.rs: {rewritten}"
        );
        assert!(docs.contains("kernel_methods_doc!(ext)"));
    }

    /// Every method DESIGN.md's language list names exists in the table. DESIGN.md lives
    /// beside the repository (`../shared`); where it is absent there is nothing to check.
    #[test]
    fn design_language_list_names_only_table_methods() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/DESIGN.md");
        let Ok(design) = std::fs::read_to_string(path) else {
            println!("{path} not found: nothing to check");
            return;
        };
        let text: String = design.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut named = list_after(&text, "`f32` methods (");
        named.extend(list_after(&text, "extension trait ("));
        let known: Vec<&str> = MethodList::names(Provider::Std)
            .into_iter()
            .chain(MethodList::names(Provider::StableExt))
            .collect();
        let missing: Vec<&&str> = named
            .iter()
            .filter(|n| **n != "..." && !known.contains(n))
            .collect();
        assert!(named.len() > 10, "DESIGN's lists not found: {named:?}");
        // DESIGN's lists end in `...`: they may name fewer methods than the table has
        let unnamed: Vec<&&str> = known.iter().filter(|k| !named.contains(k)).collect();
        println!("methods of the table DESIGN.md does not name: {unnamed:?}");
        assert!(
            missing.is_empty(),
            "DESIGN names methods the table lacks: {missing:?}"
        );
    }
}
