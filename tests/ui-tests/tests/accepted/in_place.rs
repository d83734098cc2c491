use tang_runtime::prelude::*;

#[kernel]
pub fn momentum(p: &mut f32, buf: &mut f32, g: f32, #[uniform] lr: f32, #[uniform] mu: f32) {
    *buf = mu * *buf + g;
    *p -= lr * *buf;
}

pub fn main() {
    let (mut p, mut b) = (1.0, 0.0);
    momentum(&mut p, &mut b, 2.0, 0.5, 0.9);
    assert_eq!((p, b), (0.0, 2.0));
    assert_eq!(momentum::KERNEL.inouts(), &["p", "buf"]);
    assert!(momentum::KERNEL.outputs().is_empty());
    let _: fn(&Device, &Tensor, &Tensor, &Tensor, f32, f32) -> Result<(), tang_runtime::Error> =
        momentum::launch;
}
