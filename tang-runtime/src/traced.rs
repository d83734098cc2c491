//! Closures over tensors: [`Device::map`] and [`Device::fused_forward_backward`] trace a
//! Rust closure over [`Expr`] into an elementwise kernel (see `tang_expr::trace`).
//!
//! Tracing runs the closure on every call (cheap: it builds a small graph); code
//! generation and naga validation run once per distinct graph. The kernels are cached
//! process-wide by the graph's structural hash and leaked to `&'static KernelDesc` (the
//! pipeline cache keeps them for the life of the process anyway), so the leak is bounded
//! by the number of distinct closures.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use tang_expr::{Expr, KernelDesc, Traced};

use crate::device::Device;
use crate::error::Error;
use crate::tensor::Tensor;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Map,
    FusedGrad,
}

type Cache = Mutex<HashMap<(Kind, usize, u64), &'static KernelDesc>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The kernel of `traced` for `kind`, generated on the first call for its graph.
fn kernel_for(kind: Kind, traced: &Traced) -> Result<&'static KernelDesc, Error> {
    traced.check()?;
    let key = (kind, traced.n_inputs, traced.structural_hash());
    if let Some(k) = cache().lock().map_err(|_| Error::Poisoned)?.get(&key) {
        return Ok(k);
    }
    // Generate outside the lock: naga validation takes a while and other threads may
    // trace other closures meanwhile. Two threads racing on one graph both generate;
    // the first insert wins and the other kernel is dropped unleaked.
    let kernel = match kind {
        Kind::Map => traced.kernel("map")?,
        Kind::FusedGrad => traced.fused_kernel("traced")?,
    };
    let mut c = cache().lock().map_err(|_| Error::Poisoned)?;
    // SAFETY: `kernel` is tang-expr's code generator's output, unchanged.
    #[allow(unsafe_code)]
    Ok(*c
        .entry(key)
        .or_insert_with(|| unsafe { kernel.leak_trusted() }))
}

impl Device {
    /// Applies `f` elementwise over the tensors (with the broadcasting of
    /// [`Device::launch`]): `dev.map(&[&x, &y], |v| (v[0] * v[1]).tanh())`.
    ///
    /// # Errors
    /// [`Error::Shader`] when the closure misuses an [`Expr`] (one from another trace);
    /// otherwise as [`Device::launch`].
    pub fn map(
        &self,
        inputs: &[&Tensor],
        f: impl FnOnce(&[Expr]) -> Expr,
    ) -> Result<Tensor, Error> {
        let traced = tang_expr::trace(inputs.len(), f);
        let k = kernel_for(Kind::Map, &traced)?;
        self.launch(k, inputs, &[], &[])?
            .pop()
            .ok_or(Error::Shader(tang_expr::ExprError::NoOutputs))
    }

    /// Evaluates `f` and all its partial derivatives elementwise in one dispatch:
    /// returns `[f(v), df/dv0, df/dv1, ...]`, each of the launch shape.
    ///
    /// # Errors
    /// As [`Device::map`]; [`Error::TooLarge`] when `2 * inputs + 1` storage buffers exceed
    /// the device's per-stage limit.
    pub fn fused_forward_backward(
        &self,
        inputs: &[&Tensor],
        f: impl FnOnce(&[Expr]) -> Expr,
    ) -> Result<Vec<Tensor>, Error> {
        let traced = tang_expr::trace(inputs.len(), f);
        let k = kernel_for(Kind::FusedGrad, &traced)?;
        self.launch(k, inputs, &[], &[])
    }
}
