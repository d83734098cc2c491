//! Elementwise launches of any [`KernelDesc`] (binding layout in `tang_expr::kernel`).
//!
//! Shapes: the launch length `n` is the in-outs' length if there are any, else the
//! longest input's; outputs take that input's (or in-out's) shape. Each input has length
//! `n` (elementwise), 1 (a scalar broadcast to every element) or the shape of the
//! trailing dimensions of the full shape (a row, e.g. a bias, repeated over every row).

use tang_expr::KernelDesc;
use tang_expr::kernel::elementwise_dispatch;

use crate::device::Device;
use crate::error::Error;
use crate::pipeline::{Binding, PipelineKey};
use crate::tensor::{DType, Tensor};

/// Strips leading 1s: `[1, 1, 3]` and `[3]` are the same row.
fn squeeze_leading(s: &[usize]) -> &[usize] {
    let k = s.iter().take_while(|&&d| d == 1).count();
    &s[k..]
}

/// The broadcast period of an input of shape `s` against the full shape (see module doc).
fn period(op: &str, name: &str, s: &[usize], full: &[usize], n: usize) -> Result<usize, Error> {
    let len: usize = s.iter().product();
    if len == n {
        return Ok(n);
    }
    if len == 1 {
        return Ok(1);
    }
    if len != 0 && full.ends_with(squeeze_leading(s)) {
        return Ok(len);
    }
    Err(Error::ShapeMismatch {
        op: op.into(),
        detail: format!(
            "input `{name}` has shape {s:?}; against the launch shape {full:?} it must have {n} elements, 1 element, or the trailing dimensions {full:?} ends with"
        ),
    })
}

impl Device {
    /// Launches an elementwise kernel: `inputs`, `inouts` (written in place) and
    /// `uniforms` in the kernel's declared order; returns its outputs (new tensors of the
    /// launch shape). Recorded now, run at the next sync point.
    ///
    /// # Errors
    /// [`Error::Arity`] on wrong counts, [`Error::DType`] for u32 tensors,
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
        for t in inputs.iter().chain(inouts) {
            t.expect_dtype(op, DType::F32)?;
        }
        // The launch shape.
        let full: Vec<usize> = if let Some(first) = inouts.first() {
            for (t, name) in inouts.iter().zip(kernel.inouts()) {
                if t.len() != first.len() {
                    return Err(Error::ShapeMismatch {
                        op: op.into(),
                        detail: format!(
                            "in-out `{name}` has shape {:?}, the first in-out {:?}",
                            t.shape(),
                            first.shape()
                        ),
                    });
                }
            }
            first.shape().to_vec()
        } else if let Some(longest) = inputs
            .iter()
            .copied()
            .reduce(|a, b| if b.len() > a.len() { b } else { a })
        {
            longest.shape().to_vec()
        } else {
            return Err(Error::ShapeMismatch {
                op: op.into(),
                detail:
                    "the kernel has no tensor inputs, so the launch length is unknown; add an input"
                        .into(),
            });
        };
        let n: usize = full.iter().product();
        let n32 = u32::try_from(n).map_err(|_| Error::TooLarge {
            what: format!("{op}: elements in one launch"),
            requested: n as u64,
            limit: u32::MAX.into(),
        })?;
        let periods = inputs
            .iter()
            .zip(kernel.inputs())
            .map(|(t, name)| period(op, name, t.shape(), &full, n).map(|p| p as u32))
            .collect::<Result<Vec<u32>, Error>>()?;
        let params = kernel.params(n32, &periods, uniforms);
        let (gx, gy) = elementwise_dispatch(n as u64).ok_or_else(|| Error::TooLarge {
            what: format!("{op}: elements in one launch"),
            requested: n as u64,
            limit: u64::from(tang_expr::kernel::MAX_WORKGROUPS_PER_DIM).pow(2)
                * u64::from(tang_expr::kernel::WORKGROUP_SIZE)
                * u64::from(tang_expr::kernel::ELEMENTS_PER_THREAD),
        })?;
        let mut outputs = Vec::with_capacity(kernel.outputs().len());
        for _ in kernel.outputs() {
            outputs.push(self.empty(&full, DType::F32)?);
        }
        let mut bindings = Vec::with_capacity(1 + kernel.storage_buffers());
        bindings.push(Binding::Uniform(bytemuck::cast_slice(&params)));
        bindings.extend(inputs.iter().map(|t| Binding::Read(t)));
        bindings.extend(inouts.iter().map(|t| Binding::ReadWrite(t)));
        bindings.extend(outputs.iter().map(Binding::ReadWrite));
        self.check_bindings(op, &bindings)?;
        if n > 0 {
            let key = PipelineKey {
                id: kernel.id(),
                trusted: kernel.is_trusted(),
                entry_point: kernel.entry_point(),
                constants: Vec::new(),
                kinds: kernel.binding_kinds().collect(),
            };
            self.record(key, op, kernel.wgsl(), &bindings, [gx, gy, 1])?;
        }
        drop(bindings);
        Ok(outputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_follow_the_broadcast_rules() {
        let full = [4, 3];
        assert_eq!(period("k", "x", &[4, 3], &full, 12).unwrap(), 12);
        assert_eq!(period("k", "x", &[12], &full, 12).unwrap(), 12);
        assert_eq!(period("k", "x", &[1], &full, 12).unwrap(), 1);
        assert_eq!(period("k", "x", &[], &full, 12).unwrap(), 1);
        assert_eq!(period("k", "b", &[3], &full, 12).unwrap(), 3);
        assert_eq!(period("k", "b", &[1, 3], &full, 12).unwrap(), 3);
        assert!(matches!(
            period("k", "b", &[4], &full, 12),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(
            period("k", "b", &[2, 3], &full, 12),
            Err(Error::ShapeMismatch { .. })
        ));
    }
}
