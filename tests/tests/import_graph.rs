//! The layering of tang's crates, kept: the files of tang-expr import each other in no
//! circle but the inherent one between the graph and the op table (the graph stores ops,
//! an op's partials build graph nodes), and tang-runtime's core (every file outside the op
//! library, `ops/` and `dense/`) has no circle and does not reach into the op library, so
//! the core can be read, tested and changed floor by floor.

use std::path::Path;

use tang_tests::import_graph::ImportGraph;

/// The import graph of the workspace crate in folder `krate`.
fn graph(krate: &str) -> ImportGraph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src");
    ImportGraph::read(&src).unwrap_or_else(|e| panic!("reading the sources of {krate}: {e}"))
}

/// Every circle of `g` that `allowed` does not accept, described for a developer.
fn forbidden_cycles(g: &ImportGraph, krate: &str, allowed: impl Fn(&[String]) -> bool) -> String {
    let cycles = g.cycles().into_iter().filter(|c| !allowed(c));
    cycles
        .map(|c| g.describe(&c, krate))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn tang_expr_has_no_circle_but_graph_and_op() {
    let g = graph("tang-expr");
    let in_graph_op = |f: &String| f == "graph.rs" || f.starts_with("op/");
    let cycles = g.cycles();
    // The reader sees the inherent circle: a reader that missed every import would pass.
    assert!(
        cycles
            .iter()
            .any(|c| c.contains(&"graph.rs".to_string()) && c.iter().any(|f| f.starts_with("op/"))),
        "the circle between graph.rs and op/ was not found; the import reader misses imports:\n{cycles:?}"
    );
    let bad = forbidden_cycles(&g, "tang-expr", |c| c.iter().all(in_graph_op));
    assert!(
        bad.is_empty(),
        "tang-expr's files import each other in a circle other than graph.rs <-> op/; move what \
         both sides need into a leaf module that imports neither:\n{bad}"
    );
}

#[test]
fn tang_runtime_core_has_no_circle_and_no_op_imports() {
    let g = graph("tang-runtime");
    let in_ops = |f: &str| f.starts_with("ops/") || f.starts_with("dense/");
    // The crate root declares the op library and re-exports from it; it is no floor.
    let core = g.restricted(|f| !in_ops(f) && f != "lib.rs");
    let mut problems = forbidden_cycles(&core, "tang-runtime", |_| false);
    for (file, refs) in &core.references {
        for r in refs {
            let names_ops = matches!(r.path.first().map(String::as_str), Some("ops" | "dense"));
            if names_ops || r.target.as_deref().is_some_and(in_ops) {
                let into = r.target.as_deref().unwrap_or("the op library");
                problems += &format!(
                    "core file {file} imports from the op library: {file}:{}: {} (defined in {into})\n",
                    r.import.line, r.import.text
                );
            }
        }
    }
    assert!(
        problems.is_empty(),
        "tang-runtime's core (files outside ops/ and dense/) must form floors: no circle, and \
         nothing from the op library (the op library builds on the core, not the reverse; move \
         what the core needs into a core leaf):\n{problems}"
    );
}
