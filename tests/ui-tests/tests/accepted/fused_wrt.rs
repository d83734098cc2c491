use tang_runtime::prelude::*;

#[fused_grad(wrt(w))]
pub fn weighted(x: f32, w: f32) -> f32 {
    (w * x).tanh()
}

pub fn main() {
    let (v, [dw]) = weighted::grad(0.5, 2.0);
    assert_eq!(v, weighted(0.5, 2.0));
    assert!((dw - 0.5 * (1.0 - v * v)).abs() < 1e-6);
    assert_eq!(weighted::vjp(0.5, 2.0, 3.0), [3.0 * dw]);
    assert_eq!(weighted::GRAD.outputs(), &["out", "d_out_w"]);
    assert_eq!(weighted::VJP.inputs(), &["x", "w", "g_out"]);
    assert_eq!(weighted::VJP.outputs(), &["grad_w"]);
    let _: fn(&Device, &Tensor, &Tensor) -> Result<(Tensor, [Tensor; 1]), tang_runtime::Error> =
        weighted::launch_grad;
    let _: fn(&Device, &Tensor, &Tensor, &Tensor) -> Result<[Tensor; 1], tang_runtime::Error> =
        weighted::launch_vjp;
}
