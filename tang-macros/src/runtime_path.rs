//! Where the generated code finds the runtime: `::tang_runtime` in a crate that depends on
//! `tang-runtime` (or is it), `::tang_nn::tang_runtime` in one that depends only on
//! `tang-nn` (which re-exports the runtime), under whatever name the manifest gives the
//! dependency. The lowering in tang-expr always emits `::tang_runtime`; the macros rewrite
//! that one leading path segment here, so tang-expr stays free of Cargo concerns.
//!
//! The manifest is read the way `proc-macro-crate` does (`CARGO_MANIFEST_DIR`), with a
//! small scanner instead of a TOML dependency: the macro only needs which dependency
//! tables name `tang-runtime` or `tang-nn`, and under what key.

use proc_macro2::{Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};

/// The path (without the leading `::`) that replaces `tang_runtime` in generated code, or
/// `None` when `::tang_runtime` itself resolves (or nothing better is known: rustc then
/// reports the missing crate as before).
pub(crate) fn runtime_path() -> Option<Vec<String>> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    let manifest = std::fs::read_to_string(std::path::Path::new(&dir).join("Cargo.toml")).ok()?;
    resolve(&manifest)
}

/// [`runtime_path`] for the text of a `Cargo.toml`.
fn resolve(manifest: &str) -> Option<Vec<String>> {
    let deps = scan(manifest);
    if deps.package.as_deref() == Some("tang-runtime") {
        return None; // `extern crate self as tang_runtime;`
    }
    // Normal dependencies first: a library build sees only those.
    for normal in [true, false] {
        let find = |pkg: &str| {
            deps.found
                .iter()
                .find(|d| d.normal == normal && d.package == pkg)
        };
        if let Some(rt) = find("tang-runtime") {
            return (rt.key != "tang_runtime").then(|| vec![rt.key.clone()]);
        }
        if let Some(nn) = find("tang-nn") {
            return Some(vec![nn.key.clone(), "tang_runtime".into()]);
        }
    }
    None
}

/// A dependency the manifest declares: the crate name code uses, the package it is, and
/// whether it is a normal (not dev- or build-) dependency.
struct Dep {
    key: String,
    package: String,
    normal: bool,
}

#[derive(Default)]
struct Scanned {
    package: Option<String>,
    found: Vec<Dep>,
}

/// Reads the package name and the tang dependencies, in any of Cargo's spellings:
/// `tang-nn = ".."`, `tang-nn.workspace = true`, `nn = { package = "tang-nn", .. }`,
/// `[dependencies.tang-nn]` (with an optional `package = ..` line below it), and
/// `[target.'cfg(..)'.dependencies]`.
fn scan(manifest: &str) -> Scanned {
    let mut out = Scanned::default();
    // The current table: `None` outside dependency tables, else whether it is a normal
    // one and, for `[dependencies.name]`, the name.
    let mut table: Option<(bool, Option<String>)> = None;
    let mut in_package = false;
    for raw in manifest.lines() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']').trim();
            in_package = header == "package";
            table = dependency_table(header);
            if let Some((normal, Some(name))) = &table {
                push(&mut out.found, name, name, *normal);
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        let value = value.trim();
        if in_package && key == "name" {
            out.package = Some(unquote(value).to_string());
            continue;
        }
        match &table {
            Some((normal, Some(name))) if key == "package" => {
                let (normal, name) = (*normal, name.clone());
                out.found.retain(|d| d.key != name.replace('-', "_"));
                push(&mut out.found, &name, unquote(value), normal);
            }
            Some((normal, None)) => {
                let name = key.split('.').next().unwrap_or(key).trim_matches('"');
                let package = package_of(value).unwrap_or(name);
                push(&mut out.found, name, package, *normal);
            }
            _ => {}
        }
    }
    out
}

/// `Some((normal, name))` for a dependency table header: `dependencies`,
/// `dev-dependencies`, `build-dependencies`, their `target.<cfg>.` forms, and the
/// `<table>.<name>` form of one dependency.
fn dependency_table(header: &str) -> Option<(bool, Option<String>)> {
    let header = match header.strip_prefix("target.") {
        // `target.'cfg(unix)'.dependencies`: drop the quoted cfg.
        Some(rest) => rest.rsplit_once(['\'', '"']).map_or(rest, |(_, r)| r),
        None => header,
    };
    let header = header.trim_start_matches('.');
    let (table, name) = match header.split_once('.') {
        Some((t, n)) => (t, Some(n.trim_matches('"').to_string())),
        None => (header, None),
    };
    match table {
        "dependencies" => Some((true, name)),
        "dev-dependencies" | "build-dependencies" => Some((false, name)),
        _ => None,
    }
}

/// The `package = "..."` of an inline table, if any.
fn package_of(value: &str) -> Option<&str> {
    let rest = value.split("package").nth(1)?;
    let rest = rest.trim_start().strip_prefix('=')?;
    Some(unquote(rest.split([',', '}']).next()?))
}

fn unquote(s: &str) -> &str {
    s.trim().trim_matches(['"', '\''])
}

fn push(found: &mut Vec<Dep>, key: &str, package: &str, normal: bool) {
    if package == "tang-runtime" || package == "tang-nn" {
        found.push(Dep {
            key: key.replace('-', "_"),
            package: package.to_string(),
            normal,
        });
    }
}

/// `tokens` with every leading-`::` path `::tang_runtime` rewritten to `::<path>`.
pub(crate) fn rewrite(tokens: TokenStream, path: &[String]) -> TokenStream {
    let mut out: Vec<TokenTree> = Vec::new();
    for tt in tokens {
        match tt {
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), rewrite(g.stream(), path));
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
            }
            TokenTree::Ident(id) if id == "tang_runtime" && after_leading_colons(&out) => {
                let span = id.span();
                for (i, seg) in path.iter().enumerate() {
                    if i > 0 {
                        out.extend(colons(span));
                    }
                    out.push(TokenTree::Ident(Ident::new(seg, span)));
                }
            }
            other => out.push(other),
        }
    }
    out.into_iter().collect()
}

/// Whether the tokens so far end in a `::` that starts a path (`: ::x`, `use ::x`), not
/// one inside a path (`a::x`).
fn after_leading_colons(out: &[TokenTree]) -> bool {
    let n = out.len();
    let is_colon = |t: &TokenTree| matches!(t, TokenTree::Punct(p) if p.as_char() == ':');
    if n < 2 || !is_colon(&out[n - 1]) || !is_colon(&out[n - 2]) {
        return false;
    }
    match n.checked_sub(3).map(|i| &out[i]) {
        Some(TokenTree::Ident(id)) => {
            let id = id.to_string();
            [
                "use", "as", "in", "pub", "return", "mut", "dyn", "impl", "for", "where", "const",
            ]
            .contains(&id.as_str())
        }
        Some(TokenTree::Punct(p)) => p.as_char() != '>',
        _ => true,
    }
}

fn colons(span: Span) -> [TokenTree; 2] {
    let mut a = Punct::new(':', Spacing::Joint);
    a.set_span(span);
    let mut b = Punct::new(':', Spacing::Alone);
    b.set_span(span);
    [TokenTree::Punct(a), TokenTree::Punct(b)]
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn finds_the_runtime_or_goes_through_tang_nn() {
        let only_nn = "[package]\nname = \"app\"\n[dependencies]\ntang-nn = \"0.1\"\n";
        assert_eq!(
            resolve(only_nn),
            Some(vec!["tang_nn".into(), "tang_runtime".into()])
        );
        let both = "[dependencies]\ntang-nn.workspace = true\ntang-runtime = { path = \"x\" }\n";
        assert_eq!(resolve(both), None);
        let renamed = "[dependencies]\nnn = { package = \"tang-nn\", version = \"0.1\" }\n";
        assert_eq!(
            resolve(renamed),
            Some(vec!["nn".into(), "tang_runtime".into()])
        );
        let table = "[dependencies.rt]\npackage = \"tang-runtime\"\nversion = \"0.1\"\n";
        assert_eq!(resolve(table), Some(vec!["rt".into()]));
        let itself = "[package]\nname = \"tang-runtime\"\n";
        assert_eq!(resolve(itself), None);
        // A dev-dependency on the runtime does not help the library build.
        let dev = "[dependencies]\ntang-nn = \"0.1\"\n[dev-dependencies]\ntang-runtime = \"0.1\"\n";
        assert_eq!(
            resolve(dev),
            Some(vec!["tang_nn".into(), "tang_runtime".into()])
        );
    }
}
