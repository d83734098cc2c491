//! Elementwise launches of any [`KernelDesc`] (binding layout in `tang_expr::kernel`).
//!
//! Shapes follow NumPy/PyTorch broadcasting: shapes are aligned from the right and a
//! dimension of size 1 (or a missing leading one) repeats. The launch shape is the
//! broadcast of every input's and in-out's shape; in-outs (written in place) must have it
//! exactly, and the outputs are new tensors of it. `[N, 1]` with `[N, M]`, `[B, 1, T]` with
//! `[B, H, T]` and `[M]` with `[N, M]` all launch; `[2, 3]` with `[3, 2]` is an
//! [`Error::ShapeMismatch`].
//!
//! Each input is read in one of the modes of [`InputRead`]: a full-length input or a
//! single element costs no index arithmetic; any other is read through strides over the
//! launch shape coalesced to at most [`MAX_LAUNCH_DIMS`] dimensions. A broadcast that
//! still needs more (say `[A, 1, B, 1, C]` against `[A, X, B, Y, C]` with a third input
//! broadcast differently) is materialised first (a strided copy, as `ops::expand` makes one): one extra
//! copy of that input, then a full-length read.

use tang_expr::KernelDesc;
use tang_expr::kernel::{InputRead, MAX_LAUNCH_DIMS, elementwise_dispatch};

use crate::cast::to_dtype;
use crate::device::Device;
use crate::dispatch::Binding;
use crate::dtype::DType;
use crate::error::Error;
use crate::pipeline::PipelineKey;
use crate::size::numel;
use crate::spec::Variants;
use crate::tensor::Tensor;

/// How one launch reads its inputs: the coalesced launch shape and one read per input,
/// `None` for an input to materialise at the launch shape first (more than
/// [`MAX_LAUNCH_DIMS`] coalesced dimensions).
#[derive(Debug, PartialEq, Eq)]
struct ReadPlan {
    dims: [u32; MAX_LAUNCH_DIMS],
    reads: Vec<Option<InputRead>>,
}

/// The strides of a contiguous tensor of `shape` read at the broadcast shape `full` (the
/// caller checked that it broadcasts): 0 along broadcast dimensions.
fn broadcast_strides(shape: &[usize], full: &[usize]) -> Vec<usize> {
    let lead = full.len() - shape.len();
    let mut strides = vec![0; full.len()];
    let mut step = 1;
    for d in (0..shape.len()).rev() {
        if shape[d] != 1 {
            strides[lead + d] = step;
        }
        step *= shape[d];
    }
    strides
}

/// Plans the reads of inputs of `shapes` against the launch shape `full` of `n > 0`
/// elements (so no input's element count overflows):
/// full-length and one-element inputs need no strides; for the others the launch
/// dimensions are coalesced (size-1 dimensions dropped, a dimension merged into its inner
/// neighbour when every strided input steps over both as one) into at most
/// [`MAX_LAUNCH_DIMS`], or they are marked for materialising.
fn plan_reads(shapes: &[&[usize]], full: &[usize], n: usize) -> ReadPlan {
    let strided: Vec<usize> = (0..shapes.len())
        .filter(|&k| {
            let len: usize = shapes[k].iter().product();
            len != n && len != 1
        })
        .collect();
    let per_input: Vec<Vec<usize>> = strided
        .iter()
        .map(|&k| broadcast_strides(shapes[k], full))
        .collect();
    // Coalesced dimensions, innermost first: (size, stride of each strided input).
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for d in (0..full.len()).rev().filter(|&d| full[d] != 1) {
        let st: Vec<usize> = per_input.iter().map(|s| s[d]).collect();
        match groups.last_mut() {
            Some((size, inner)) if inner.iter().zip(&st).all(|(&i, &o)| o == i * *size) => {
                *size *= full[d];
            }
            _ => groups.push((full[d], st)),
        }
    }
    let fits = groups.len() <= MAX_LAUNCH_DIMS;
    let mut dims = [1u32; MAX_LAUNCH_DIMS];
    if fits {
        for (k, (size, _)) in groups.iter().enumerate() {
            // Sizes and strides are below n, which the caller checked fits in a u32.
            dims[MAX_LAUNCH_DIMS - 1 - k] = *size as u32;
        }
    }
    let rows = dims[MAX_LAUNCH_DIMS - 1] % 4 == 0;
    let mut reads: Vec<Option<InputRead>> = shapes
        .iter()
        .map(|s| {
            if s.iter().product::<usize>() == n {
                Some(InputRead::Full)
            } else {
                Some(InputRead::Scalar)
            }
        })
        .collect();
    for (j, &k) in strided.iter().enumerate() {
        reads[k] = fits.then(|| {
            let mut strides = [0u32; MAX_LAUNCH_DIMS];
            for (g, (_, st)) in groups.iter().enumerate() {
                strides[MAX_LAUNCH_DIMS - 1 - g] = st[j] as u32;
            }
            InputRead::Strided { strides, rows }
        });
    }
    ReadPlan { dims, reads }
}

/// The launch shape: the broadcast of the inputs' and in-outs' shapes, which the in-outs
/// must have exactly.
fn launch_shape(
    kernel: &KernelDesc,
    inputs: &[&Tensor],
    inouts: &[&Tensor],
) -> Result<Vec<usize>, Error> {
    let op = kernel.name();
    if inputs.is_empty() && inouts.is_empty() {
        return Err(Error::ShapeMismatch {
            op: op.into(),
            detail: "the kernel has no tensor inputs, so the launch shape is unknown; add an input"
                .into(),
        });
    }
    let shapes: Vec<&[usize]> = inputs.iter().chain(inouts).map(|t| t.shape()).collect();
    let names = kernel.inputs().iter().chain(kernel.inouts());
    let full = crate::size::broadcast_shapes(&shapes).map_err(|_| Error::ShapeMismatch {
        op: op.into(),
        detail: format!(
            "the shapes of {} ({}) do not broadcast: aligned from the right, each dimension \
             must be equal or 1",
            names
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            shapes
                .iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })?;
    for (t, name) in inouts.iter().zip(kernel.inouts()) {
        if t.shape() != full.as_slice() {
            return Err(Error::ShapeMismatch {
                op: op.into(),
                detail: format!(
                    "in-out `{name}` has shape {:?}, but the tensors broadcast to {full:?}; an \
                     in-out is written in place, so it must have the launch shape",
                    t.shape()
                ),
            });
        }
    }
    Ok(full)
}

/// The element type a launch stores its tensors in, with the WGSL and id of the kernel's
/// variant for it: f16 when every tensor is f16 and the kernel has an f16 variant, else
/// f32, the f16 inputs then read as f32 (PyTorch's promotion: `f16 + f32 -> f32`). An
/// in-out is written in place in its own type, so an f32 launch refuses an f16 one, and an
/// f16 view that starts inside a 32-bit word is refused.
fn storage(
    kernel: &KernelDesc,
    inputs: &[&Tensor],
    inouts: &[&Tensor],
) -> Result<(DType, &'static str, u64), Error> {
    let op = kernel.name();
    let tensors = || inputs.iter().chain(inouts);
    if let Some(t) = tensors().find(|t| t.dtype() == DType::U32) {
        t.expect_dtype(op, DType::F32)?;
    }
    // Kernels read f16 in whole 32-bit words. A view starts on the adapter's storage
    // binding alignment (`Tensor::view_at`), commonly 16 to 256 bytes: this guards an
    // adapter that reports less than 4.
    if let Some(t) = tensors().find(|t| t.dtype() == DType::F16 && t.byte_offset() % 4 != 0) {
        return Err(Error::InvalidArgument {
            op: op.into(),
            detail: format!(
                "an f16 view starts at an odd element (byte offset {}), inside a 32-bit word; \
                 make a view at an even element, or copy the elements to a tensor of their own",
                t.byte_offset()
            ),
        });
    }
    let f16 = kernel.wgsl_f16();
    if let Some((wgsl, id)) = f16
        && tensors().all(|t| t.dtype() == DType::F16)
    {
        return Ok((DType::F16, wgsl, id));
    }
    if let Some((_, name)) = inouts
        .iter()
        .zip(kernel.inouts())
        .find(|(t, _)| t.dtype() == DType::F16)
    {
        let why = if f16.is_some() {
            "another tensor of the launch is f32"
        } else {
            "the kernel has no f16 variant"
        };
        return Err(Error::InvalidArgument {
            op: op.into(),
            detail: format!(
                "in-out `{name}` is f16 but {why}, so the launch computes in f32 and cannot \
                 write the in-out in place in its own type; pass every tensor as f16 or cast \
                 the in-out with `ops::to_dtype(.., DType::F32)`"
            ),
        });
    }
    Ok((DType::F32, kernel.wgsl(), kernel.id()))
}

/// `t` copied to the launch shape `full` (a broadcast the kernel cannot index).
fn materialise(t: &Tensor, full: &[usize]) -> Result<Tensor, Error> {
    let layout = crate::strided::broadcast_layout(t.shape(), full);
    crate::strided::gather_view("expand", t, &layout, full)
}

impl Device {
    /// Launches an elementwise kernel: `inputs`, `inouts` (written in place) and
    /// `uniforms` in the kernel's declared order; returns its outputs (new tensors of the
    /// launch shape). Recorded now, run at the next sync point. When every tensor is f16
    /// the kernel's f16 variant runs and the outputs are f16; f16 inputs beside f32 ones
    /// are read as f32 and the outputs are f32 (PyTorch's type promotion).
    ///
    /// # Errors
    /// [`Error::Arity`] on wrong counts, [`Error::DType`] for u32 tensors,
    /// [`Error::InvalidArgument`] for an f16 in-out in an f32 launch,
    /// [`Error::ShapeMismatch`] for shapes that do not broadcast, [`Error::TooLarge`] over
    /// a device limit, [`Error::Aliasing`] when an in-out is also passed elsewhere.
    pub fn launch(
        &self,
        kernel: &KernelDesc,
        inputs: &[&Tensor],
        inouts: &[&Tensor],
        uniforms: &[f32],
    ) -> Result<Vec<Tensor>, Error> {
        let op = kernel.name();
        for (what, expected, got) in [
            ("inputs", kernel.inputs().len(), inputs.len()),
            ("in-out tensors", kernel.inouts().len(), inouts.len()),
            ("uniforms", kernel.uniforms().len(), uniforms.len()),
        ] {
            if expected != got {
                return Err(Error::Arity {
                    op: op.into(),
                    what,
                    expected,
                    got,
                });
            }
        }
        let (dtype, wgsl, id) = storage(kernel, inputs, inouts)?;
        let full = launch_shape(kernel, inputs, inouts)?;
        let n = numel(&full)?;
        let n32 = u32::try_from(n).map_err(|_| Error::TooLarge {
            what: format!("{op}: elements in one launch"),
            requested: n as u64,
            limit: u32::MAX.into(),
        })?;
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        // An empty launch runs nothing (and its inputs' other dimensions may be too large
        // to multiply); otherwise every input has at most `n` elements.
        let plan = if n == 0 {
            ReadPlan {
                dims: [1; MAX_LAUNCH_DIMS],
                reads: vec![Some(InputRead::Full); inputs.len()],
            }
        } else {
            plan_reads(&shapes, &full, n)
        };
        // Inputs whose broadcast needs more dimensions than the kernel indexes are copied
        // to the launch shape (see the module doc).
        // f16 inputs of an f32 launch are read as f32 (see `storage`): in place, through
        // the kernel's form that widens them as it loads (`half::elementwise_f16_inputs`),
        // except those copied to the launch shape, which are cast first.
        let widened: Vec<usize> = inputs
            .iter()
            .zip(&plan.reads)
            .enumerate()
            .filter(|(_, (t, r))| dtype == DType::F32 && t.dtype() == DType::F16 && r.is_some())
            .map(|(i, _)| i)
            .collect();
        let (wgsl, id) = if widened.is_empty() {
            (wgsl, id)
        } else {
            static FORMS: Variants<(u64, Vec<usize>)> = Variants::new();
            let form = FORMS.get(&(id, widened.clone()), || {
                crate::wgsl_rewrite::elementwise_f16_inputs(op, wgsl, &widened)
            })?;
            (form.wgsl(), form.id())
        };
        let mut expanded: Vec<Option<Tensor>> = Vec::new();
        for (i, (t, read)) in inputs.iter().zip(&plan.reads).enumerate() {
            expanded.push(match read {
                None => Some(materialise(&to_dtype(t, dtype)?, &full)?),
                Some(_) => (t.dtype() != dtype && !widened.contains(&i))
                    .then(|| to_dtype(t, dtype))
                    .transpose()?,
            });
        }
        let reads: Vec<InputRead> = plan
            .reads
            .iter()
            .map(|r| r.unwrap_or(InputRead::Full))
            .collect();
        let inputs: Vec<&Tensor> = inputs
            .iter()
            .zip(&expanded)
            .map(|(t, e)| e.as_ref().unwrap_or(t))
            .collect();
        let params = kernel.params(n32, plan.dims, &reads, uniforms);
        let (gx, gy) = elementwise_dispatch(n as u64).ok_or_else(|| Error::TooLarge {
            what: format!("{op}: elements in one launch"),
            requested: n as u64,
            limit: u64::from(tang_expr::kernel::MAX_WORKGROUPS_PER_DIM).pow(2)
                * u64::from(tang_expr::kernel::WORKGROUP_SIZE)
                * u64::from(tang_expr::kernel::ELEMENTS_PER_THREAD),
        })?;
        let mut outputs = Vec::with_capacity(kernel.outputs().len());
        for _ in kernel.outputs() {
            outputs.push(self.empty(&full, dtype)?);
        }
        let mut bindings = Vec::with_capacity(1 + kernel.storage_buffers());
        bindings.push(Binding::Uniform(bytemuck::cast_slice(&params)));
        bindings.extend(inputs.iter().map(|t| Binding::Read(t)));
        bindings.extend(inouts.iter().map(|t| Binding::ReadWrite(t)));
        bindings.extend(outputs.iter().map(Binding::ReadWrite));
        self.check_bindings(op, &bindings)?;
        if n > 0 {
            // Each input's read mode specialises the pipeline (mode 0, the default, is not
            // passed, so the all-contiguous launch has the constant-free key).
            let constants = reads
                .iter()
                .zip(tang_expr::kernel::READ_MODE_CONSTANTS)
                .filter(|(r, _)| r.mode() != 0)
                .map(|(r, name)| (name, f64::from(r.mode()).to_bits()))
                .collect();
            let key = PipelineKey {
                id,
                trusted: kernel.is_trusted(),
                entry_point: kernel.entry_point(),
                constants,
                kinds: kernel.binding_kinds().collect(),
            };
            self.record(key, op, wgsl, &bindings, [gx, gy, 1])?;
        }
        drop(bindings);
        Ok(outputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strided(strides: [u32; 4], rows: bool) -> Option<InputRead> {
        Some(InputRead::Strided { strides, rows })
    }

    #[test]
    fn full_and_scalar_inputs_read_without_strides() {
        let p = plan_reads(&[&[4, 3], &[1], &[], &[12]], &[4, 3], 12);
        assert_eq!(
            p.reads,
            [
                Some(InputRead::Full),
                Some(InputRead::Scalar),
                Some(InputRead::Scalar),
                Some(InputRead::Full)
            ]
        );
    }

    #[test]
    fn broadcast_inputs_coalesce_to_few_dimensions() {
        // A column and a row against a matrix.
        let p = plan_reads(
            &[&[4096, 4096], &[4096, 1], &[4096]],
            &[4096, 4096],
            1 << 24,
        );
        assert_eq!(p.dims, [1, 1, 4096, 4096]);
        assert_eq!(p.reads[1], strided([0, 0, 1, 0], true));
        assert_eq!(p.reads[2], strided([0, 0, 0, 1], true));
        // [B, 1, T] against [B, H, T]; the other input's full length merges nothing away.
        let p = plan_reads(&[&[2, 1, 5], &[2, 3, 5]], &[2, 3, 5], 30);
        assert_eq!(p.dims, [1, 2, 3, 5]);
        assert_eq!(p.reads[0], strided([0, 5, 0, 1], false));
        // Leading dimensions that the input steps over as one merge: [6, 1] in [2, 3, 4].
        let p = plan_reads(&[&[3, 1]], &[2, 3, 4], 24);
        assert_eq!(p.dims, [1, 2, 3, 4]);
        assert_eq!(p.reads[0], strided([0, 0, 1, 0], true));
        let p = plan_reads(&[&[2, 3, 1]], &[2, 3, 4], 24);
        assert_eq!(p.dims, [1, 1, 6, 4]);
        assert_eq!(p.reads[0], strided([0, 0, 1, 0], true));
    }

    #[test]
    fn broadcasts_past_four_dimensions_are_materialised() {
        let full = [2, 3, 2, 3, 2];
        let p = plan_reads(&[&[2, 1, 2, 1, 2], &[1, 3, 1, 3, 1]], &full, 72);
        assert_eq!(p.reads, [None, None]);
        // Four alternations still fit.
        let p = plan_reads(&[&[2, 1, 2, 1]], &[2, 3, 2, 3], 36);
        assert_eq!(p.dims, [2, 3, 2, 3]);
        assert_eq!(p.reads[0], strided([2, 0, 1, 0], false));
    }

    #[test]
    fn broadcast_strides_skip_size_one_dimensions() {
        assert_eq!(broadcast_strides(&[3, 1], &[2, 3, 4]), [0, 1, 0]);
        assert_eq!(broadcast_strides(&[4], &[2, 3, 4]), [0, 0, 1]);
        assert_eq!(broadcast_strides(&[2, 1, 4], &[2, 3, 4]), [4, 0, 1]);
    }
}
