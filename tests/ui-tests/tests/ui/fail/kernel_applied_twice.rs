use tang_runtime::prelude::*;

#[kernel]
#[kernel]
fn f(x: f32) -> f32 {
    x * 2.0
}

#[fused_grad]
#[kernel]
fn g(x: f32) -> f32 {
    x * 3.0
}

fn main() {}
