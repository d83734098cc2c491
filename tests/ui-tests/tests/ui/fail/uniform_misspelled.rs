use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32, #[unifrom] lr: f32) -> f32 {
    x * lr
}

fn main() {}
