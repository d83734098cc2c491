// A user of tang-nn alone: the kernel macros, the tensor and autograd all come through
// `tang_nn` (the crate `tests/standalone-nn` checks the same with tang-nn as its only
// dependency, where the generated paths go through `::tang_nn::tang_runtime`).
use tang_nn::prelude::*;

#[fused_grad]
fn soft_relu(x: f32) -> f32 {
    (4.0 * x).softplus() / 4.0
}

#[kernel]
fn scale(x: &mut f32, #[uniform] s: f32) {
    *x *= s;
}

pub fn main() {
    let (v, [d]) = soft_relu::grad(0.0);
    assert!((v - 2f32.ln() / 4.0).abs() < 1e-6 && (d - 0.5).abs() < 1e-6);
    let _: fn(
        &tang_nn::tang_runtime::Device,
        &tang_nn::tang_runtime::Tensor,
        f32,
    ) -> Result<(), _> = scale::launch;
    let _ = |x: &Tensor| apply(&soft_relu::FUSED, &[x], &[]);
}
