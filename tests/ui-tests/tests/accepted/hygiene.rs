#![allow(non_snake_case)]
use tang_runtime::prelude::*;

// Parameters named like the generated items and locals.
#[kernel]
pub fn devs(dev: f32, tang_dev: f32, dev_: f32) -> f32 {
    dev + tang_dev * dev_
}

#[fused_grad]
pub fn items(KERNEL: f32, WGSL: f32, GRAD: f32, VJP: f32) -> f32 {
    KERNEL * WGSL + GRAD * VJP
}

// `out` and the names derived from it are parameters: the output is renamed.
#[fused_grad]
pub fn outs(out: f32, g_out: f32, d_out_out: f32) -> f32 {
    out * g_out + d_out_out
}

pub fn main() {
    assert_eq!(devs(1.0, 2.0, 3.0), 7.0);
    assert_eq!(devs::KERNEL.inputs(), &["dev", "tang_dev", "dev_"]);
    let _: fn(&Device, &Tensor, &Tensor, &Tensor) -> Result<Tensor, tang_runtime::Error> =
        devs::launch;
    assert_eq!(
        items::grad(1.0, 2.0, 3.0, 4.0),
        (14.0, [2.0, 1.0, 4.0, 3.0])
    );
    let _ = items::launch_vjp;
    assert_eq!(outs::KERNEL.inputs(), &["out", "g_out", "d_out_out"]);
    assert_eq!(outs::KERNEL.outputs(), &["out_"]);
    assert_eq!(outs::VJP.inputs(), &["out", "g_out", "d_out_out", "g_out_"]);
    assert_eq!(outs::vjp(2.0, 3.0, 4.0, 1.0), [3.0, 2.0, 1.0]);
}
