// A user of tang-runtime alone (the crate `tests/standalone` checks the same with
// tang-runtime as its only dependency).
use tang_runtime::prelude::*;

#[fused_grad]
fn soft_relu(x: f32) -> f32 {
    (4.0 * x).softplus() / 4.0
}

pub fn main() {
    let (v, [d]) = soft_relu::grad(0.0);
    assert!((v - 2f32.ln() / 4.0).abs() < 1e-6 && (d - 0.5).abs() < 1e-6);
    let _: fn(&Device, &Tensor) -> Result<Tensor, tang_runtime::Error> = soft_relu::launch;
}
