use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    x += 1.0;
    x
}

fn main() {}
