use tang_runtime::prelude::*;

// `let y;` assigned on every path later, as Rust allows.
#[fused_grad]
fn abs_like(x: f32) -> f32 {
    let y;
    if x > 0.0 {
        y = x;
    } else {
        y = -x;
    }
    let z: f32;
    z = y * 2.0;
    z
}

pub fn main() {
    assert_eq!(abs_like(-3.0), 6.0);
    assert_eq!(abs_like::grad(-3.0), (6.0, [-2.0]));
}
