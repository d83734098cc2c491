//! A crate that uses tang the way a user does: it depends on `tang-runtime` alone, so
//! everything the kernel macros generate must resolve through `::tang_runtime`.

use tang_runtime::prelude::*;

/// The tanh approximation of GELU, written out.
#[fused_grad]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044_715 * x * x * x)).tanh())
}

/// Adam's update, in place.
#[allow(clippy::too_many_arguments)]
#[kernel]
pub fn adam(
    p: &mut f32,
    m: &mut f32,
    v: &mut f32,
    g: f32,
    #[uniform] lr: f32,
    #[uniform] b1: f32,
    #[uniform] b2: f32,
    #[uniform] eps: f32,
    #[uniform] bc1: f32,
    #[uniform] bc2: f32,
) {
    *m = b1 * *m + (1.0 - b1) * g;
    *v = b2 * *v + (1.0 - b2) * g * g;
    *p -= lr * (*m / bc1) / ((*v / bc2).sqrt() + eps);
}

/// Kernels sharing a helper.
#[kernels]
pub mod losses {
    use tang_runtime::prelude::*;

    fn sq(d: f32) -> f32 {
        d * d
    }

    /// Squared error.
    #[fused_grad(wrt(p))]
    pub fn mse(p: f32, t: f32) -> f32 {
        sq(p - t)
    }

    /// Binary cross-entropy on logits.
    #[fused_grad(wrt(z))]
    pub fn bce(z: f32, y: f32) -> f32 {
        z.softplus() - y * z
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_items_work_from_a_user_crate() {
        let (v, [d]) = gelu::grad(1.0);
        assert_eq!(v, gelu(1.0));
        assert!((d - 1.082_964).abs() < 1e-5);
        assert_eq!(losses::mse::grad(3.0, 1.0), (4.0, [4.0]));
        assert_eq!(losses::bce::vjp(0.0, 1.0, 2.0), [2.0 * (0.5 - 1.0)]);
        assert_eq!(adam::KERNEL.inouts(), &["p", "m", "v"]);
        tang_runtime::tang_expr::validate(gelu::VJP.wgsl()).unwrap();
    }

    #[test]
    fn launches_on_the_device() -> Result<(), tang_runtime::Error> {
        let dev = Device::new()?;
        let x = Tensor::from_slice(&dev, &[-2.0, 0.0, 1.0, 3.0], &[4])?;
        let y = gelu::launch(&dev, &x)?.to_vec()?;
        for (got, x) in y.iter().zip([-2.0f32, 0.0, 1.0, 3.0]) {
            assert!((got - gelu(x)).abs() < 1e-5, "{got} vs {}", gelu(x));
        }
        let p = Tensor::from_slice(&dev, &[1.0; 4], &[4])?;
        let m = Tensor::zeros(&dev, &[4])?;
        let v = Tensor::zeros(&dev, &[4])?;
        adam::launch(&dev, &p, &m, &v, &x, 0.1, 0.9, 0.999, 1e-8, 0.1, 0.001)?;
        let p = p.to_vec()?;
        assert!(
            (p[0] - 1.1).abs() < 1e-5 && (p[3] - 0.9).abs() < 1e-5,
            "{p:?}"
        );
        Ok(())
    }
}
