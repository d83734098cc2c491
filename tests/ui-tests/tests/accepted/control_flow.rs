use tang_runtime::prelude::*;

/// Every statement form: shadowing, compound assignment, `else if` chains with
/// assignments, constant paths, UFCS, unrolled loops, tuple returns.
#[fused_grad]
pub fn mixed(x: f32, y: f32) -> (f32, f32) {
    let x = x * 1.0f32;
    let mut acc = 0.0;
    for i in 0..=3 {
        if i == 0 {
            acc += 1.0;
        } else {
            acc = acc * x + i as f32;
        }
    }
    let mut z = y;
    if x > 1.0 && y > 0.0 {
        z *= 2.0;
    } else if x < -1.0 || !(y < 0.0) {
        z -= 1.0;
    } else {
        z = f32::max(z, core::f32::consts::PI);
    }
    let w = if z >= 0.0 {
        z.sqrt()
    } else {
        std::f32::consts::E
    };
    (acc.mul_add(0.5, w), z.clamp(-10.0, 10.0).powi(2))
}

pub fn main() {
    let ((a, b), [[da_dx, _], [_, db_dy]]) = mixed::grad(2.0, 3.0);
    assert_eq!((a, b), mixed(2.0, 3.0));
    // acc = ((1*x + 1)*x + 2)*x + 3; d/dx at 2 = 3x^2 + 2x + 2 = 18; da/dx = 9
    assert!((da_dx - 9.0).abs() < 1e-5);
    assert!((db_dy - 2.0 * 6.0 * 2.0).abs() < 1e-4);
    assert_eq!(mixed::KERNEL.outputs(), &["out0", "out1"]);
}
