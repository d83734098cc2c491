use tang_runtime::prelude::*;

#[fused_grad(wrt(s))]
fn f(x: f32, #[uniform] s: f32) -> f32 {
    x * s
}

fn main() {}
