//! The import graph of a crate's source files and its circles, for the test that keeps the
//! layering of tang's crates (`tests/import_graph.rs`).
//!
//! A file imports another when it names, by a `crate::` path (in a `use` item or in code),
//! something the other defines. Names re-exported by `pub use` resolve to the file that
//! defines them, so `use crate::Tensor` is an edge to `tensor.rs`, not to `lib.rs`; a path
//! that ends at a module declared in `lib.rs` or a `mod.rs` is no edge, and neither are the
//! re-exports of `lib.rs` and `mod.rs` files themselves (they wire the folder together).
//! `super::` and `self::` paths are not read: a module and its own children are one unit;
//! the circles this looks for are between modules.

mod lex;
mod modules;
mod refs;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::Path;

use modules::Crate;

/// One import between two files: the first place the source names the target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    /// The line of the source file.
    pub line: usize,
    /// The path as written (`use crate::op::Op`, `crate::ops::expand`).
    pub text: String,
}

/// One `crate::` path a file names, and the file it resolves to.
#[derive(Clone, Debug)]
pub struct Reference {
    /// Where and how it is written.
    pub import: Import,
    /// The segments after `crate`.
    pub path: Vec<String>,
    /// The file defining what it names (`None`: a module declaration, or outside the crate).
    pub target: Option<String>,
}

/// The import graph of one crate: files (relative to its `src`) and their imports.
#[derive(Debug)]
pub struct ImportGraph {
    /// For each file, the files it imports and the first import of each.
    pub edges: BTreeMap<String, BTreeMap<String, Import>>,
    /// For each file, every `crate::` path it names (re-exports of `lib.rs`/`mod.rs` aside).
    pub references: BTreeMap<String, Vec<Reference>>,
}

impl ImportGraph {
    /// Reads the crate whose sources are in `src` (from `lib.rs` along `mod` declarations).
    pub fn read(src: &Path) -> Result<ImportGraph, String> {
        let krate = Crate::read(src)?;
        let mut edges: BTreeMap<String, BTreeMap<String, Import>> = BTreeMap::new();
        let mut references: BTreeMap<String, Vec<Reference>> = BTreeMap::new();
        for file in krate.files.values() {
            let out = edges.entry(file.name.clone()).or_default();
            let refs = references.entry(file.name.clone()).or_default();
            for r in &file.refs.crate_refs {
                if r.public_use && file.is_root() {
                    continue;
                }
                let import = Import {
                    line: r.line,
                    text: r.text.clone(),
                };
                let target = krate.resolve(&r.path).map(|t| t.name.clone());
                if let Some(t) = target.as_ref().filter(|t| **t != file.name) {
                    out.entry(t.clone()).or_insert_with(|| import.clone());
                }
                refs.push(Reference {
                    import,
                    path: r.path.clone(),
                    target,
                });
            }
        }
        Ok(ImportGraph { edges, references })
    }

    /// The graph restricted to the files `keep` accepts.
    pub fn restricted(&self, keep: impl Fn(&str) -> bool) -> ImportGraph {
        let edges = self
            .edges
            .iter()
            .filter(|(f, _)| keep(f))
            .map(|(f, out)| {
                let out = out
                    .iter()
                    .filter(|(t, _)| keep(t))
                    .map(|(t, i)| (t.clone(), i.clone()));
                (f.clone(), out.collect())
            })
            .collect();
        let references = self.references.iter().filter(|(f, _)| keep(f));
        let references = references.map(|(f, r)| (f.clone(), r.clone())).collect();
        ImportGraph { edges, references }
    }

    /// The circles: strongly connected components of more than one file, each sorted.
    pub fn cycles(&self) -> Vec<Vec<String>> {
        let names: Vec<&String> = self.edges.keys().collect();
        let index: BTreeMap<&String, usize> =
            names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let adj: Vec<Vec<usize>> = names
            .iter()
            .map(|n| {
                self.edges[*n]
                    .keys()
                    .filter_map(|t| index.get(t).copied())
                    .collect()
            })
            .collect();
        let mut out: Vec<Vec<String>> = strongly_connected(&adj)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut files: Vec<String> = c.iter().map(|&i| names[i].clone()).collect();
                files.sort();
                files
            })
            .collect();
        out.sort();
        out
    }

    /// A report of one circle for a developer: its files, one shortest loop through the
    /// first, and every import among its files with the line that makes it.
    pub fn describe(&self, cycle: &[String], crate_dir: &str) -> String {
        let members: BTreeSet<&String> = cycle.iter().collect();
        let mut s = format!("circle of {} files in {crate_dir}/src:\n", cycle.len());
        if let Some(walk) = cycle.first().and_then(|f| self.shortest_loop(f, &members)) {
            let _ = writeln!(s, "  e.g. {}", walk.join(" -> "));
        }
        let _ = writeln!(s, "  imports among them:");
        for from in cycle {
            let out = self.edges.get(from).into_iter().flatten();
            for (to, import) in out.filter(|(t, _)| members.contains(t)) {
                let _ = writeln!(
                    s,
                    "    {from} -> {to}   ({from}:{}: {})",
                    import.line, import.text
                );
            }
        }
        s
    }

    /// The shortest walk from `start` back to itself inside `members`.
    fn shortest_loop(&self, start: &String, members: &BTreeSet<&String>) -> Option<Vec<String>> {
        let mut prev: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(at) = queue.pop_front() {
            let out = self.edges.get(at).into_iter().flat_map(|o| o.keys());
            for next in out.filter(|t| members.contains(t)) {
                if next == start {
                    // Back from `at` to `start`, then turned round.
                    let mut walk = vec![start.clone()];
                    let mut k = at;
                    while k != start {
                        walk.push(k.clone());
                        k = prev[k];
                    }
                    walk.push(start.clone());
                    walk.reverse();
                    return Some(walk);
                }
                if !prev.contains_key(next) {
                    prev.insert(next, at);
                    queue.push_back(next);
                }
            }
        }
        None
    }
}

/// Tarjan's strongly connected components of the graph `adj` (node -> successors).
fn strongly_connected(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        adj: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.adj[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let n = adj.len();
    let mut s = State {
        adj,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a crate of `files` (path below `src`, text) to a fresh folder; returns `src`.
    fn write_crate(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let src = std::env::temp_dir()
            .join(format!("tang-import-graph-{name}-{}", std::process::id()))
            .join("src");
        for (path, text) in files {
            let file = src.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        src
    }

    #[test]
    fn reads_uses_and_code_paths_but_not_comments_or_strings() {
        let refs = refs::FileRefs::read(
            "//! [`crate::a::A`] in docs\n\
             use crate::{b::{self, B as Bee}, c::*};\n\
             pub(crate) use crate::d::D;\n\
             const S: &str = \"crate::e::E\"; /* crate::f::F */\n\
             fn g() { crate::h::H::new(); let _ = r#\"crate::i\"#; }\n\
             #[path = \"x_impl.rs\"]\nmod x;\n",
        );
        let texts: Vec<&str> = refs.crate_refs.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "use crate::b",
                "use crate::b::B",
                "use crate::c::*",
                "use crate::d::D",
                "crate::h::H::new"
            ]
        );
        assert_eq!(refs.uses[1].binds.as_deref(), Some("Bee"));
        assert!(refs.uses[3].public && !refs.uses[0].public);
        assert_eq!(refs.mods[0].path.as_deref(), Some("x_impl.rs"));
        assert!(refs.defines.iter().any(|d| d == "g"));
    }

    #[test]
    fn re_exports_resolve_to_the_defining_file_and_circles_are_found() {
        let src = write_crate(
            "reexport",
            &[
                ("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::A;\n"),
                ("a.rs", "pub struct A;\nuse crate::b::B2;\n"),
                ("b/mod.rs", "mod inner;\npub use inner::B as B2;\n"),
                (
                    "b/inner.rs",
                    "pub struct B;\nfn f() -> crate::A { crate::A }\n",
                ),
                ("c.rs", "use crate::b;\nuse crate::a::A;\n"),
            ],
        );
        let g = ImportGraph::read(&src).unwrap();
        assert_eq!(g.edges["a.rs"].keys().collect::<Vec<_>>(), ["b/inner.rs"]);
        assert_eq!(g.edges["b/inner.rs"]["a.rs"].text, "crate::A");
        // `use crate::b` names a folder's module declaration: no edge.
        assert_eq!(g.edges["c.rs"].keys().collect::<Vec<_>>(), ["a.rs"]);
        assert_eq!(
            g.cycles(),
            [vec!["a.rs".to_string(), "b/inner.rs".to_string()]]
        );
        let report = g.describe(&g.cycles()[0], "demo");
        assert!(report.contains("a.rs -> b/inner.rs -> a.rs"), "{report}");
        assert!(
            report.contains("a.rs -> b/inner.rs   (a.rs:2: use crate::b::B2)"),
            "{report}"
        );
        let _ = std::fs::remove_dir_all(src.parent().unwrap());
    }
}
