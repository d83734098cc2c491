//! What one source file says about modules: the `mod` items it declares, the names its
//! `use` items bind, the items it defines, and every `crate::` path it names.

use super::lex::{Kind, Token, tokenize};

/// A `mod name;` declaration, with its `#[path]` if it has one.
#[derive(Clone, Debug)]
pub struct ModDecl {
    /// The module's name.
    pub name: String,
    /// The file named by a `#[path = "..."]` attribute, relative to the declaring file.
    pub path: Option<String>,
}

/// One leaf of a `use` tree.
#[derive(Clone, Debug)]
pub struct UseLeaf {
    /// The full path, prefix included (`use a::{b::C}` gives `a, b, C`).
    pub path: Vec<String>,
    /// The name it binds (`C`, or the `as` name); `None` for a glob.
    pub binds: Option<String>,
    /// Whether the `use` is `pub` or `pub(...)`: a re-export other modules may name.
    pub public: bool,
    /// Whether it is an item of the file's module (not inside a function or an inline
    /// module such as `mod tests`): only those bind names other files can reach.
    pub top_level: bool,
    /// The line of the leaf's last segment.
    pub line: usize,
}

/// A path starting with `crate` (or `$crate`) named anywhere in the file.
#[derive(Clone, Debug)]
pub struct CrateRef {
    /// The segments after `crate`.
    pub path: Vec<String>,
    /// Whether it is a leaf of a `pub use` (a re-export).
    pub public_use: bool,
    /// The line of its last segment.
    pub line: usize,
    /// How it reads in the source, for messages (`use crate::op::Op`).
    pub text: String,
}

/// Everything the graph needs from one file.
#[derive(Clone, Debug, Default)]
pub struct FileRefs {
    /// The `mod name;` declarations.
    pub mods: Vec<ModDecl>,
    /// Every `use` leaf.
    pub uses: Vec<UseLeaf>,
    /// The names of the items the file's module defines (functions, types, constants,
    /// macros...), not counting those inside other items.
    pub defines: Vec<String>,
    /// Every `crate::` path, from `use` items and from code.
    pub crate_refs: Vec<CrateRef>,
}

impl FileRefs {
    /// Reads one file's source.
    pub fn read(src: &str) -> FileRefs {
        let t = tokenize(src);
        let mut refs = FileRefs::default();
        let (mut i, mut depth) = (0, 0usize);
        while i < t.len() {
            match t[i].kind {
                Kind::Punct('{') => depth += 1,
                Kind::Punct('}') => depth = depth.saturating_sub(1),
                _ => {}
            }
            match ident(&t, i) {
                Some("use") => {
                    let public = is_public(&t, i);
                    let mut leaves = Vec::new();
                    i = use_tree(&t, i + 1, &mut Vec::new(), &mut leaves);
                    for mut leaf in leaves {
                        leaf.public = public;
                        leaf.top_level = depth == 0;
                        if let Some(path) = crate_path(&leaf.path) {
                            let shown = if leaf.binds.is_none() { "::*" } else { "" };
                            refs.crate_refs.push(CrateRef {
                                text: format!("use {}{shown}", leaf.path.join("::")),
                                path,
                                public_use: public,
                                line: leaf.line,
                            });
                        }
                        refs.uses.push(leaf);
                    }
                }
                Some("mod") if matches!(t.get(i + 2).map(|x| &x.kind), Some(Kind::Punct(';'))) => {
                    if let Some(name) = ident(&t, i + 1) {
                        let path = path_attr(&t, i);
                        refs.mods.push(ModDecl {
                            name: name.to_string(),
                            path,
                        });
                    }
                    i += 3;
                }
                Some(
                    kw @ ("fn" | "struct" | "enum" | "trait" | "type" | "const" | "static"
                    | "union" | "mod"),
                ) => {
                    if let Some(name) = ident(&t, i + 1).filter(|_| depth == 0) {
                        if kw != "const" || name != "fn" {
                            refs.defines.push(name.to_string());
                        }
                    }
                    i += 1;
                }
                Some("macro_rules") => {
                    if let Some(name) = ident(&t, i + 2).filter(|_| depth == 0) {
                        refs.defines.push(name.to_string());
                    }
                    i += 1;
                }
                Some("crate" | "$crate")
                    if t.get(i + 1).map(|x| &x.kind) == Some(&Kind::PathSep) =>
                {
                    // A path in code (or in a macro body): `crate::a::b`, up to its last name.
                    let after_sep = i > 0 && t[i - 1].kind == Kind::PathSep;
                    let mut path = Vec::new();
                    let mut j = i + 1;
                    let mut line = t[i].line;
                    while t.get(j).map(|x| &x.kind) == Some(&Kind::PathSep) {
                        match ident(&t, j + 1) {
                            Some(seg) => {
                                path.push(seg.to_string());
                                line = t[j + 1].line;
                                j += 2;
                            }
                            None => break,
                        }
                    }
                    if !after_sep && !path.is_empty() {
                        let text = format!("crate::{}", path.join("::"));
                        refs.crate_refs.push(CrateRef {
                            path,
                            public_use: false,
                            line,
                            text,
                        });
                    }
                    i = j;
                }
                _ => i += 1,
            }
        }
        refs
    }
}

/// The identifier at `i`, if the token there is one.
fn ident(t: &[Token], i: usize) -> Option<&str> {
    match t.get(i).map(|x| &x.kind) {
        Some(Kind::Ident(s)) => Some(s),
        _ => None,
    }
}

/// The segments after `crate` of a path that starts with it.
fn crate_path(path: &[String]) -> Option<Vec<String>> {
    match path.first().map(String::as_str) {
        Some("crate" | "$crate") => Some(path[1..].to_vec()),
        _ => None,
    }
}

/// Whether the item whose keyword is at `i` is `pub` or `pub(...)`.
fn is_public(t: &[Token], i: usize) -> bool {
    match i.checked_sub(1).map(|k| &t[k].kind) {
        Some(Kind::Ident(s)) => s == "pub",
        // `pub(crate) use`: the token before is `)`; look for `pub (` before the group.
        Some(Kind::Punct(')')) => t[..i]
            .iter()
            .rposition(|x| x.kind == Kind::Punct('('))
            .is_some_and(|open| open > 0 && ident(t, open - 1) == Some("pub")),
        _ => false,
    }
}

/// The file named by a `#[path = "..."]` among the attributes before the `mod` at `i`.
fn path_attr(t: &[Token], i: usize) -> Option<String> {
    // Back over the visibility and the attributes, to the previous item's end.
    let start = t[..i]
        .iter()
        .rposition(|x| matches!(x.kind, Kind::Punct(';' | '{' | '}')))
        .map_or(0, |k| k + 1);
    let attrs = &t[start..i];
    attrs
        .windows(4)
        .find_map(|w| match (&w[0].kind, &w[1].kind, &w[2].kind, &w[3].kind) {
            (Kind::Ident(p), Kind::Punct('='), Kind::Str(s), Kind::Punct(']')) if p == "path" => {
                Some(s.clone())
            }
            _ => None,
        })
}

/// Reads a `use` tree from `i` (after `use` or inside braces) with the segments before it
/// in `prefix`, adding its leaves; returns the index after it (after the `;` at top level).
fn use_tree(t: &[Token], mut i: usize, prefix: &mut Vec<String>, out: &mut Vec<UseLeaf>) -> usize {
    let depth = prefix.len();
    loop {
        match t.get(i).map(|x| &x.kind) {
            Some(Kind::Ident(s)) if s == "as" => {
                // `path as name` (or `as _`): the leaf binds the new name.
                let binds = ident(t, i + 1).map(str::to_string);
                let line = t[i].line;
                push_leaf(prefix, binds, line, out);
                prefix.truncate(depth);
                i += 2;
            }
            Some(Kind::Ident(s)) => {
                prefix.push(s.clone());
                let next = t.get(i + 1).map(|x| &x.kind);
                if next != Some(&Kind::PathSep)
                    && !matches!(next, Some(Kind::Ident(a)) if a == "as")
                {
                    // `a::{self}` binds `a`.
                    let binds = if s == "self" {
                        prefix.iter().rev().nth(1).cloned()
                    } else {
                        Some(s.clone())
                    };
                    push_leaf(prefix, binds, t[i].line, out);
                    prefix.truncate(depth);
                }
                i += 1;
            }
            Some(Kind::PathSep) => i += 1,
            Some(Kind::Punct('*')) => {
                push_leaf(prefix, None, t[i].line, out);
                prefix.truncate(depth);
                i += 1;
            }
            Some(Kind::Punct('{')) => {
                let mut inner = prefix.clone();
                i = use_tree(t, i + 1, &mut inner, out);
                prefix.truncate(depth);
            }
            Some(Kind::Punct(',')) => {
                prefix.truncate(depth);
                i += 1;
            }
            Some(Kind::Punct('}')) => return i + 1,
            Some(Kind::Punct(';')) | None => return i + 1,
            Some(_) => i += 1,
        }
    }
}

/// Adds the leaf that `prefix` names (`a::self` names `a`), binding `binds` (`None`: a
/// glob).
fn push_leaf(prefix: &[String], binds: Option<String>, line: usize, out: &mut Vec<UseLeaf>) {
    let mut path = prefix.to_vec();
    if path.last().map(String::as_str) == Some("self") {
        path.pop();
    }
    out.push(UseLeaf {
        path,
        binds,
        public: false,
        top_level: false,
        line,
    });
}
