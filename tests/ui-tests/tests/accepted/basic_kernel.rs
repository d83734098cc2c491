use tang_runtime::prelude::*;

#[kernel]
pub fn axpy(x: f32, y: f32, #[uniform] a: f32) -> f32 {
    a * x + y
}

pub fn main() {
    assert_eq!(axpy(2.0, 1.0, 3.0), 7.0);
    assert_eq!(axpy::KERNEL.inputs(), &["x", "y"]);
    assert_eq!(axpy::KERNEL.uniforms(), &["a"]);
    assert_eq!(axpy::KERNEL.outputs(), &["out"]);
    assert_eq!(axpy::KERNEL.wgsl(), axpy::WGSL);
    // The launcher's type follows the signature.
    let _: fn(&Device, &Tensor, &Tensor, f32) -> Result<Tensor, tang_runtime::Error> = axpy::launch;
}
