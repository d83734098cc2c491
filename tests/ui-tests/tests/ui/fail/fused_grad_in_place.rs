use tang_runtime::prelude::*;

#[fused_grad]
fn f(x: f32, acc: &mut f32) -> f32 {
    *acc += x;
    x
}

fn main() {}
