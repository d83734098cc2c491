//! Many tensors to and from segments of one flat tensor, several per launch: [`pack`]
//! copies each part into its segment, [`unpack`] copies each segment back into its part.
//! An optimizer updates every parameter in one launch over flat tensors this way (PyTorch
//! reaches the same with the pointer lists of its multi-tensor kernels, which WGSL has
//! not): three launches per group of up to [`MAX_PARTS`] tensors instead of one per tensor.
//!
//! A launch binds up to `min(MAX_PARTS, storage buffers per stage - 1)` parts beside the
//! flat tensor; the uniform holds a table of the parts' first workgroups, lengths and
//! segment offsets, and each workgroup finds its part by a search of that table. Words are
//! copied as 32-bit words, so f32 and u32 tensors are copied bit for bit; each thread
//! copies [`words_per_thread`] of them (all loaded, then all stored), so a workgroup's
//! search and switch are paid once per 16 KiB on a GPU: with one word a thread, packing GPT-2
//! small's parameters and gradients ran at 1.6 TB/s on an H200 (BENCHMARKS.md, 2026-11-29
//! (eighth session)).

use std::fmt::Write as _;

use crate::dispatch::Binding;
use crate::ops::check;
use crate::spec::Variants;
use crate::{Error, Tensor};

/// The most parts one launch binds (the uniform table's size).
pub const MAX_PARTS: usize = 64;

/// Finds `lo`, the part of workgroup `g` (the last part whose first workgroup, `.x` of its
/// row of the uniform's sorted `table`, is at most `g`), in the kernels that bind parts:
/// these and [`crate::ops::foreach_sum_of_squares`]'s.
pub(crate) const PART_SEARCH_WGSL: &str = "    var lo = 0u;
    var hi = p.parts;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (p.table[mid].x <= g) { lo = mid; } else { hi = mid; }
    }";

/// Threads per workgroup.
const WG: usize = 256;
/// Words each thread of a kernel on `dev` copies; a workgroup copies `WG * words` words
/// of one part, thread `lid`'s at `lid`, `lid + WG`, ... (coalesced).
///
/// 16 on GPUs; 4 on a software adapter, whose compiler takes minutes over the 64-part
/// kernels' unrolled loops at 16 (one 64-part pack and unpack on each of two devices:
/// 86 s on two cores at 16, 21 s at 8, 6 s at 4), where a GPU compiles them at once. On
/// an H200 (BENCHMARKS.md, 2026-11-30) GPT-2 small's pack took 0.514 ms at 16 words,
/// 0.660 at 8 and 0.699 at 4 (unpack 0.257, 0.304, 0.293).
fn words_per_thread(dev: &crate::Device) -> usize {
    if dev.info().is_software { 4 } else { 16 }
}

/// The kernels by (parts bound, direction: `true` packs, words per thread).
static KERNELS: Variants<(usize, bool, usize)> = Variants::new();

/// The WGSL of a pack (parts read, flat written) or an unpack (flat read, parts written)
/// over `parts` bindings, `words` words a thread.
fn generate(parts: usize, pack: bool, words: usize) -> (String, String) {
    let name = format!("{}_{parts}", if pack { "pack" } else { "unpack" });
    let (part_access, flat_access) = if pack {
        ("read", "read_write")
    } else {
        ("read_write", "read")
    };
    let mut w = String::new();
    let _ = writeln!(
        w,
        "// {name}: segments of one flat tensor (generated; see ops/segments.rs).
struct Params {{
    parts: u32, _a: u32, _b: u32, _c: u32,
    // Per part: its first workgroup, its length in words, its segment's first word.
    table: array<vec4<u32>, {MAX_PARTS}>,
}}
@group(0) @binding(0) var<uniform> p: Params;"
    );
    for i in 0..parts {
        let _ = writeln!(
            w,
            "@group(0) @binding({}) var<storage, {part_access}> part{i}: array<u32>;",
            i + 1
        );
    }
    let _ = writeln!(
        w,
        "@group(0) @binding({}) var<storage, {flat_access}> flat: array<u32>;

@compute @workgroup_size({WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
    let g = wid.x + wid.y * nwg.x;
{PART_SEARCH_WGSL}
    let part = p.table[lo];
    let i0 = (g - part.x) * {chunk}u + lid;
    if (lo >= p.parts || i0 >= part.y) {{ return; }}
    // Words past the part's end are neither read nor written: loads clamp into the part,
    // stores are skipped.
    let last = part.y - 1u;
    var v: array<u32, {words}>;
    switch lo {{",
        parts + 1,
        chunk = WG * words,
    );
    // Every load of a thread is issued before its first store (loops of constant bounds,
    // which keep the 64-part kernel short).
    for i in 0..parts {
        let (load, store) = if pack {
            (
                format!("part{i}[min(i0 + k * {WG}u, last)]"),
                "flat[part.z + i]".to_string(),
            )
        } else {
            (
                format!("flat[part.z + min(i0 + k * {WG}u, last)]"),
                format!("part{i}[i]"),
            )
        };
        let _ = writeln!(
            w,
            "        case {i}u: {{
            for (var k = 0u; k < {words}u; k++) {{ v[k] = {load}; }}
            for (var k = 0u; k < {words}u; k++) {{
                let i = i0 + k * {WG}u;
                if (i < part.y) {{ {store} = v[k]; }}
            }}
        }}"
        );
    }
    w.push_str("        default: {}\n    }\n}\n");
    (name, w)
}

/// How many parts one launch binds on `dev`: [`MAX_PARTS`], or fewer where the device
/// binds fewer storage buffers (one binding is the flat tensor's or the output's).
pub(crate) fn parts_per_launch(dev: &crate::Device) -> usize {
    let limit = dev.info().limits.max_storage_buffers_per_shader_stage as usize;
    MAX_PARTS.min(limit.saturating_sub(1)).max(1)
}

/// Copies between `flat` and the parts, `parts[i]` at word `offsets[i]` of `flat`, in
/// launches of as many parts as the device binds, `per_thread` words a thread
/// ([`words_per_thread`]; a test runs the GPUs' count on the software adapter).
fn run(
    op: &str,
    flat: &Tensor,
    parts: &[&Tensor],
    offsets: &[usize],
    pack: bool,
    per_thread: usize,
) -> Result<(), Error> {
    if parts.len() != offsets.len() {
        return Err(Error::Arity {
            op: op.into(),
            what: "offsets",
            expected: parts.len(),
            got: offsets.len(),
        });
    }
    let dev = flat.device();
    for (i, (t, &at)) in parts.iter().zip(offsets).enumerate() {
        check::same_device(op, dev, &[("part", t)])?;
        if t.dtype().size() != 4 || t.dtype().size() != flat.dtype().size() {
            return Err(check::mismatch(
                op,
                format!(
                    "part {i} is {:?} and the flat tensor {:?}: both must be 32-bit (f32 or \
                     u32; cast f16 parts with `to_dtype`)",
                    t.dtype(),
                    flat.dtype()
                ),
            ));
        }
        if at.checked_add(t.len()).is_none_or(|end| end > flat.len()) {
            return Err(check::mismatch(
                op,
                format!(
                    "part {i} ({} elements at offset {at}) does not fit in the flat tensor of {} elements",
                    t.len(),
                    flat.len()
                ),
            ));
        }
        if t.overlaps(flat) {
            return Err(Error::Aliasing {
                op: op.into(),
                detail: format!("part {i} shares its bytes with the flat tensor"),
            });
        }
    }
    if pack {
        check_disjoint(op, parts, offsets)?;
    }
    crate::size::fits_u32(op, "flat elements", flat.len())?;
    let per_launch = parts_per_launch(dev);
    // Empty parts take no workgroups; leave them out of the table.
    let live: Vec<(&Tensor, usize)> = parts
        .iter()
        .zip(offsets)
        .filter(|(t, _)| !t.is_empty())
        .map(|(t, &at)| (*t, at))
        .collect();
    for chunk in live.chunks(per_launch) {
        let key = (chunk.len(), pack, per_thread);
        let kernel = KERNELS.get(&key, || generate(chunk.len(), pack, per_thread))?;
        let mut words = vec![0u32; 4 + 4 * MAX_PARTS];
        words[0] = chunk.len() as u32;
        let mut groups = 0usize;
        for (i, (t, at)) in chunk.iter().enumerate() {
            words[4 + 4 * i..8 + 4 * i].copy_from_slice(&[
                groups as u32,
                t.len() as u32,
                *at as u32,
                0,
            ]);
            groups += t.len().div_ceil(WG * per_thread);
        }
        let mut bindings = vec![Binding::Uniform(bytemuck::cast_slice(&words))];
        for (t, _) in chunk {
            bindings.push(if pack {
                Binding::Read(t)
            } else {
                Binding::ReadWrite(t)
            });
        }
        bindings.push(if pack {
            Binding::ReadWrite(flat)
        } else {
            Binding::Read(flat)
        });
        let grid = crate::spec::grid(dev, op, groups as u64)?;
        dev.dispatch_raw(kernel, &[], &bindings, grid)?;
    }
    Ok(())
}

/// Refuses segments of `flat` that share an element: parts are copied in parallel, in
/// launches of several parts, so which of two overlapping parts would win is not defined.
/// Empty parts occupy nothing. (Called after every segment was checked to fit.)
fn check_disjoint(op: &str, parts: &[&Tensor], offsets: &[usize]) -> Result<(), Error> {
    let mut segments: Vec<(usize, usize, usize)> = parts
        .iter()
        .zip(offsets)
        .enumerate()
        .filter(|(_, (t, _))| !t.is_empty())
        .map(|(i, (t, &at))| (at, at + t.len(), i))
        .collect();
    segments.sort_unstable();
    for pair in segments.windows(2) {
        let [(a0, a1, i), (b0, b1, j)] = [pair[0], pair[1]];
        if b0 < a1 {
            return Err(check::invalid(
                op,
                format!(
                    "parts {i} (elements {a0}..{a1}) and {j} (elements {b0}..{b1}) overlap in the flat tensor; give each part its own range"
                ),
            ));
        }
    }
    Ok(())
}

/// Copies each of `parts` into `flat` at element `offsets[i]` (PyTorch's flattening of
/// a parameter list for a multi-tensor optimizer), up to 64 (`MAX_PARTS`) parts per launch.
/// Elements of `flat` outside the segments keep their values. Segments must not overlap
/// (the parts are copied in parallel, so no part could be said to win).
///
/// ```
/// use tang_runtime::{Device, Tensor, ops};
/// let dev = Device::new()?;
/// let (a, b) = (Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?, Tensor::from_slice(&dev, &[3.0], &[1])?);
/// let flat = Tensor::zeros(&dev, &[4])?;
/// ops::pack(&[&a, &b], &flat, &[0, 3])?;
/// assert_eq!(flat.to_vec()?, [1.0, 2.0, 0.0, 3.0]);
/// # Ok::<(), tang_runtime::Error>(())
/// ```
///
/// # Errors
/// [`Error::Arity`] when `offsets` and `parts` differ in length; [`Error::ShapeMismatch`]
/// when a part does not fit `flat` at its offset or differs in element size;
/// [`Error::InvalidArgument`] when two parts' segments overlap; [`Error::Aliasing`] when
/// a part shares bytes with `flat`; [`Error::DeviceMismatch`].
pub fn pack(parts: &[&Tensor], flat: &Tensor, offsets: &[usize]) -> Result<(), Error> {
    run(
        "pack",
        flat,
        parts,
        offsets,
        true,
        words_per_thread(flat.device()),
    )
}

/// The inverse of [`pack`]: copies `flat[offsets[i] .. offsets[i] + parts[i].len()]` into
/// each of `parts`, up to 64 (`MAX_PARTS`) parts per launch. Segments may overlap here (each
/// part only reads them).
///
/// ```
/// use tang_runtime::{Device, Tensor, ops};
/// let dev = Device::new()?;
/// let flat = Tensor::from_slice(&dev, &[1.0, 2.0, 0.0, 3.0], &[4])?;
/// let (a, b) = (Tensor::zeros(&dev, &[2])?, Tensor::zeros(&dev, &[1])?);
/// ops::unpack(&flat, &[0, 3], &[&a, &b])?;
/// assert_eq!((a.to_vec()?, b.to_vec()?), (vec![1.0, 2.0], vec![3.0]));
/// # Ok::<(), tang_runtime::Error>(())
/// ```
///
/// # Errors
/// As [`pack`], except that overlapping segments are allowed.
pub fn unpack(flat: &Tensor, offsets: &[usize], parts: &[&Tensor]) -> Result<(), Error> {
    run(
        "unpack",
        flat,
        parts,
        offsets,
        false,
        words_per_thread(flat.device()),
    )
}

/// A representative of each kernel shape, for the registry.
pub(crate) fn kernels() -> Vec<crate::spec::Source> {
    [
        (1, true, 16),
        (3, false, 16),
        (MAX_PARTS, true, 16),
        (MAX_PARTS, false, 4),
    ]
    .into_iter()
    .map(|(n, pack, words)| generate(n, pack, words))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word count GPUs run (16), on whatever adapter the tests have (the software
    /// adapter runs 4 in `pack`/`unpack`): parts within one workgroup's 4,096 words,
    /// across several, and empty, packed into a flat tensor with gaps and back.
    #[test]
    fn sixteen_words_a_thread_pack_and_unpack() {
        let mut rng = tang_testing::Rng::new(3);
        let dev = crate::Device::new().expect("a Vulkan adapter (lavapipe at least)");
        let lens = [0usize, 1, 255, 4096, 4097, 9000];
        let offsets: Vec<usize> = lens
            .iter()
            .scan(0, |end, &n| {
                *end += 3 + n;
                Some(*end - n)
            })
            .collect();
        let end = offsets[lens.len() - 1] + lens[lens.len() - 1] + 2;
        let values: Vec<Vec<f32>> = lens.iter().map(|&n| rng.vec(n, 1.0)).collect();
        let parts: Vec<Tensor> = values
            .iter()
            .map(|v| Tensor::from_slice(&dev, v, &[v.len()]).unwrap())
            .collect();
        let refs: Vec<&Tensor> = parts.iter().collect();
        let flat = Tensor::full(&dev, &[end], -7.0).unwrap();
        run("pack", &flat, &refs, &offsets, true, 16).unwrap();
        let mut want = vec![-7.0; end];
        for (v, &at) in values.iter().zip(&offsets) {
            want[at..at + v.len()].copy_from_slice(v);
        }
        assert_eq!(flat.to_vec().unwrap(), want);
        let back: Vec<Tensor> = lens
            .iter()
            .map(|&n| Tensor::zeros(&dev, &[n]).unwrap())
            .collect();
        let back_refs: Vec<&Tensor> = back.iter().collect();
        run("unpack", &flat, &back_refs, &offsets, false, 16).unwrap();
        for (b, v) in back.iter().zip(&values) {
            assert_eq!(&b.to_vec().unwrap(), v);
        }
    }
}
