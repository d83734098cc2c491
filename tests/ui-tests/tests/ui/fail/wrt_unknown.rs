use tang_runtime::prelude::*;

#[fused_grad(wrt(y))]
fn f(x: f32) -> f32 {
    x * x
}

fn main() {}
