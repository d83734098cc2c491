//! WGSL code generation for elementwise kernels (layout in [`crate::kernel`]).
//!
//! One SSA `let` per live node, in node order; leaves are read where they are used.
//! Output is a pure function of the graph and the spec: same input, same bytes.

use std::fmt::Write as _;

pub(crate) mod branches;
pub(crate) mod literal;
pub(crate) mod parts;
pub(crate) mod print;
pub(crate) mod storage;

use literal::ZERO_WORD;
use print::{Leaf, Printed, print_graph};
use storage::Storage;

use crate::error::ExprError;
use crate::graph::{Graph, NodeId, stable_hash};
use crate::kernel::{ENTRY_POINT, Kernel, READ_MODE_CONSTANTS, WORKGROUP_SIZE};
use crate::op::lanes::Lanes;
use crate::ty::Ty;
use crate::validate::validate;

/// What an elementwise kernel reads and writes.
///
/// `Node::Input(i)` reads element input `i` for `i < inputs.len()`, and the current value
/// of in-out `i - inputs.len()` above that. `Node::Uniform(j)` reads uniform `j`.
#[derive(Clone, Debug)]
pub struct ElementwiseSpec<'g> {
    /// The kernel's name.
    pub name: String,
    /// The graph holding every value the kernel computes.
    pub graph: &'g Graph,
    /// Names of the per-element inputs.
    pub inputs: Vec<String>,
    /// Names of the uniforms.
    pub uniforms: Vec<String>,
    /// Names of the in-out values and the node holding each one's new value.
    pub inouts: Vec<(String, NodeId)>,
    /// Names of the outputs and the node each one stores.
    pub outputs: Vec<(String, NodeId)>,
}

/// The offset in a broadcast input of launch element `e`: the element's coordinates in the
/// launch shape `[_, d1, d2, d3]` (coalesced to at most four dimensions by the runtime)
/// dotted with the input's strides (0 along a broadcast dimension). Three divisions; only
/// the broadcast read modes call it.
const OFFSET_HELPER: &str = "fn tang_offset(e: u32, s: vec4<u32>) -> u32 {
    let r1 = e / params.d3;
    let r2 = r1 / params.d2;
    let c0 = r2 / params.d1;
    return c0 * s.x + (r2 - c0 * params.d1) * s.y + (r1 - r2 * params.d2) * s.z + (e - r1 * params.d3) * s.w;
}

";

fn check_name(name: &str, seen: &mut Vec<String>) -> Result<(), ExprError> {
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !name.starts_with("__");
    if !ok || seen.iter().any(|s| s == name) {
        return Err(ExprError::BadName(name.to_string()));
    }
    seen.push(name.to_string());
    Ok(())
}

/// Generates the WGSL of an elementwise kernel and of its f16-storage variant (layout in
/// [`crate::kernel`]), validates both with naga and returns the kernel with their stable
/// ids.
///
/// # Errors
/// A bad or repeated name, an input or uniform index the spec does not declare, a root
/// that is not a float, a kernel that writes nothing, or (a tang bug) a shader naga
/// rejects.
pub fn emit_elementwise(spec: &ElementwiseSpec<'_>) -> Result<Kernel, ExprError> {
    let g = spec.graph;
    let mut seen = Vec::new();
    check_name(&spec.name, &mut Vec::new())?;
    for n in spec.inputs.iter().chain(&spec.uniforms) {
        check_name(n, &mut seen)?;
    }
    for (n, _) in spec.inouts.iter().chain(&spec.outputs) {
        check_name(n, &mut seen)?;
    }
    if spec.inouts.is_empty() && spec.outputs.is_empty() {
        return Err(ExprError::NoOutputs);
    }
    if spec.inputs.len() > READ_MODE_CONSTANTS.len() {
        return Err(ExprError::Arity {
            op: "elementwise kernel (inputs)",
            expected: READ_MODE_CONSTANTS.len(),
            got: spec.inputs.len(),
        });
    }
    let roots: Vec<NodeId> = spec
        .inouts
        .iter()
        .chain(&spec.outputs)
        .map(|(_, id)| *id)
        .collect();
    for &r in &roots {
        if g.ty(r)? != Ty::F32 {
            return Err(ExprError::Type {
                op: "store",
                position: 0,
                expected: Ty::F32,
                got: Ty::Bool,
            });
        }
    }
    let wgsl = emit_wgsl(spec, &roots, Storage::F32)?;
    validate(&wgsl)?;
    let wgsl_f16 = emit_wgsl(spec, &roots, Storage::F16)?;
    validate(&wgsl_f16)?;
    Ok(Kernel {
        name: spec.name.clone(),
        id: stable_hash(&wgsl),
        wgsl,
        id_f16: stable_hash(&wgsl_f16),
        wgsl_f16: Some(wgsl_f16),
        inputs: spec.inputs.clone(),
        uniforms: spec.uniforms.clone(),
        inouts: spec.inouts.iter().map(|(n, _)| n.clone()).collect(),
        outputs: spec.outputs.iter().map(|(n, _)| n.clone()).collect(),
    })
}

/// The WGSL of the checked `spec` (whose stored values are `roots`) with every tensor in
/// `storage`: the same body, only the loads and stores differ.
fn emit_wgsl(
    spec: &ElementwiseSpec<'_>,
    roots: &[NodeId],
    storage: Storage,
) -> Result<String, ExprError> {
    let g = spec.graph;
    let live = g.reachable(roots);
    let n_in = spec.inputs.len() as u32;
    let n_io = spec.inouts.len() as u32;

    let lanes = Lanes::Vec4;
    let t = lanes.float();
    let mut leaf = |leaf: Leaf, body: &mut String| -> Result<String, ExprError> {
        match leaf {
            Leaf::Input(i) if i < n_in => {
                let mode = READ_MODE_CONSTANTS[i as usize];
                // How the input is read is chosen per pipeline (the constant `mode`, see the
                // layout):
                // a full-length input is one 128-bit load and a scalar one splat, with no
                // index arithmetic; a broadcast input computes its offset from the launch
                // coordinates. The constant folds the switch away.
                let name = &spec.inputs[i as usize];
                let b = format!("in_{name}");
                let (full, first) = (storage.load4(&b, "q"), storage.load_first(&b));
                let (row, at_o) = (storage.load4(&b, "o >> 2u"), storage.load1(&b, "o"));
                let at_j = storage.load1(&b, "j");
                let _ = writeln!(
                    body,
                    "    var x_{name}: {t};\n    switch {mode} {{\n        case 0u: {{ x_{name} = {full}; }}\n        case 1u: {{ x_{name} = {t}({first}); }}\n        case 2u: {{\n            // the four lanes share a row of the launch: one offset, then the row's stride\n            let o = tang_offset(i, params.s_{name});\n            let s = params.s_{name}.w;\n            if (s == 1u && (o & 3u) == 0u) {{ x_{name} = {row}; }}\n            else if (s == 0u) {{ x_{name} = {t}({at_o}); }}\n            else {{ for (var l = 0u; l < 4u; l++) {{ let j = o + l * s; x_{name}[l] = {at_j}; }} }}\n        }}\n        default: {{\n            for (var l = 0u; l < 4u; l++) {{ let j = tang_offset(min(i + l, params.n - 1u), params.s_{name}); x_{name}[l] = {at_j}; }}\n        }}\n    }}"
                );
                Ok(format!("x_{name}"))
            }
            Leaf::Input(i) if i < n_in + n_io => {
                let name = &spec.inouts[(i - n_in) as usize].0;
                let _ = writeln!(
                    body,
                    "    let x_{name} = {};",
                    storage.load4(&format!("io_{name}"), "q")
                );
                Ok(format!("x_{name}"))
            }
            Leaf::Input(i) => Err(ExprError::Index {
                what: "input",
                index: i,
                count: n_in + n_io,
            }),
            Leaf::Uniform(j) => {
                let name = spec.uniforms.get(j as usize).ok_or(ExprError::Index {
                    what: "uniform",
                    index: j,
                    count: spec.uniforms.len() as u32,
                })?;
                Ok(format!("{t}(params.u_{name})"))
            }
        }
    };
    let Printed {
        helpers,
        mut body,
        names,
        branched,
    } = print_graph(g, &live, roots, lanes, ZERO_WORD, &mut leaf)?;
    // A long body validates in linear time only as several functions (see parts.rs).
    // A body with blocks stays whole: the splitter moves `let` lines, not blocks, and
    // the kernels with blocks (the optimizers') are a few hundred statements long.
    let parts = if branched {
        None
    } else {
        parts::split(g, &body, &names, roots, lanes)
    };
    if let Some(p) = &parts {
        body.clone_from(&p.body);
    }
    // Stores: whole groups, except in the last group when n is not a multiple of 4, where
    // only the lanes below n are written (so nothing past a tensor's end changes).
    let stores: Vec<(String, &str)> = spec
        .inouts
        .iter()
        .map(|(name, id)| (format!("io_{name}"), names[id.index()].as_str()))
        .chain(
            spec.outputs
                .iter()
                .map(|(name, id)| (format!("out_{name}"), names[id.index()].as_str())),
        )
        .collect();
    storage.stores(&mut body, &stores);

    let mut w = String::new();
    let _ = writeln!(w, "// tang kernel `{}` (generated)", spec.name);
    w.push_str("struct Params {\n    n: u32,\n    d1: u32,\n    d2: u32,\n    d3: u32,\n");
    for n in &spec.inputs {
        let _ = writeln!(w, "    s_{n}: vec4<u32>,");
    }
    for n in &spec.uniforms {
        let _ = writeln!(w, "    u_{n}: f32,");
    }
    w.push_str("    zero: u32,\n}\n\n");
    for mode in &READ_MODE_CONSTANTS[..spec.inputs.len()] {
        let _ = writeln!(w, "override {mode}: u32 = 0u;");
    }
    w.push_str("@group(0) @binding(0) var<uniform> params: Params;\n");
    let mut binding = 1;
    let array = storage.array();
    for n in &spec.inputs {
        let _ = writeln!(
            w,
            "@group(0) @binding({binding}) var<storage, read> in_{n}: {array};"
        );
        binding += 1;
    }
    for (n, _) in &spec.inouts {
        let _ = writeln!(
            w,
            "@group(0) @binding({binding}) var<storage, read_write> io_{n}: {array};"
        );
        binding += 1;
    }
    for (n, _) in &spec.outputs {
        let _ = writeln!(
            w,
            "@group(0) @binding({binding}) var<storage, read_write> out_{n}: {array};"
        );
        binding += 1;
    }
    w.push('\n');
    if !spec.inputs.is_empty() {
        w.push_str(OFFSET_HELPER);
    }
    w.push_str(&storage.helpers());
    for text in helpers.values() {
        w.push_str(text);
        w.push('\n');
    }
    if let Some(p) = &parts {
        w.push_str(&p.functions);
    }
    let _ = writeln!(
        w,
        "@compute @workgroup_size({WORKGROUP_SIZE})\nfn {ENTRY_POINT}(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{"
    );
    let _ = writeln!(
        w,
        "    // thread q computes elements i .. i + 4\n    let q = gid.x + gid.y * nwg.x * {WORKGROUP_SIZE}u;\n    let i = q * 4u;\n    if (i >= params.n) {{ return; }}"
    );
    w.push_str(&body);
    w.push_str("}\n");
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{ALL_OPS, Op};

    /// A kernel `k` of `graph` with these element inputs, uniforms and outputs.
    fn spec<'g>(
        graph: &'g Graph,
        inputs: &[&str],
        uniforms: &[&str],
        outputs: Vec<(String, NodeId)>,
    ) -> ElementwiseSpec<'g> {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect();
        let (inputs, uniforms) = (names(inputs), names(uniforms));
        ElementwiseSpec {
            name: "k".into(),
            graph,
            inputs,
            uniforms,
            inouts: vec![],
            outputs,
        }
    }

    #[test]
    fn every_op_emits_valid_wgsl_and_output_is_deterministic() {
        let mut g = Graph::new();
        let a = g.input(0);
        let b = g.input(1);
        let c = g.uniform(0);
        let mut outs = Vec::new();
        for &op in ALL_OPS {
            let args: Vec<NodeId> = op
                .arg_types()
                .enumerate()
                .map(|(k, t)| match t {
                    Ty::Bool => g.app(Op::Lt, &[a, b]),
                    Ty::F32 => [a, b, c][k],
                })
                .collect();
            let mut r = g.app(op, &args);
            if op.result_type() == Ty::Bool {
                r = g.app(Op::Select, &[r, a, b]);
            }
            outs.push((format!("o{}", outs.len()), r));
        }
        outs.push(("inf".into(), g.constant(f32::NEG_INFINITY)));
        let spec = spec(&g, &["a", "b"], &["c"], outs);
        let k1 = emit_elementwise(&spec).unwrap();
        let k2 = emit_elementwise(&spec).unwrap();
        assert_eq!(k1, k2);
    }

    #[test]
    fn the_f16_variant_differs_only_in_its_loads_and_stores() {
        let mut g = Graph::new();
        let (x, w) = (g.input(0), g.input(1));
        let y = g.app(Op::Mul, &[x, w]);
        let mut spec = spec(&g, &["x", "w"], &[], vec![("y".into(), y)]);
        spec.inouts = vec![("acc".into(), y)];
        let k = emit_elementwise(&spec).unwrap();
        let h = k.wgsl_f16.as_deref().unwrap();
        assert_eq!(k.id_f16, stable_hash(h));
        assert_ne!(k.id, k.id_f16, "the pipeline cache tells them apart");
        // Every binding holds f16 bits; the arithmetic is the f32 kernel's.
        assert_eq!(h.matches(": array<vec2<u32>>;").count(), 4);
        assert!(!h.contains("array<vec4<f32>>"));
        let body = |w: &str| {
            w[w.find("let v").unwrap()..]
                .lines()
                .next()
                .unwrap()
                .to_string()
        };
        assert_eq!(body(&k.wgsl), body(h));
        // The last group keeps the half of a word past the tensor's end.
        assert!(h.contains("& 0xffff0000u"));
    }

    #[test]
    fn bad_specs_are_errors() {
        let mut g = Graph::new();
        let a = g.input(0);
        assert_eq!(
            emit_elementwise(&spec(&g, &["a"], &[], vec![])),
            Err(ExprError::NoOutputs)
        );
        assert!(matches!(
            emit_elementwise(&spec(&g, &[], &[], vec![("y".into(), a)])),
            Err(ExprError::Index { .. })
        ));
        assert!(matches!(
            emit_elementwise(&spec(&g, &["a"], &[], vec![("a".into(), a)])),
            Err(ExprError::BadName(_))
        ));
    }
}
