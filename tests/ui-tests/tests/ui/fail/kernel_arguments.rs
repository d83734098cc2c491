use tang_runtime::prelude::*;

#[kernel(fast)]
fn f(x: f32) -> f32 {
    x
}

fn main() {}
