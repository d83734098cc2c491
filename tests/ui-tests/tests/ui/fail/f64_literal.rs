use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    x * 2.0f64 as f32
}

fn main() {}
