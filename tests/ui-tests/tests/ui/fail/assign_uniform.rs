use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32, #[uniform] lr: f32) -> f32 {
    lr = lr * 0.5;
    x * lr
}

fn main() {}
