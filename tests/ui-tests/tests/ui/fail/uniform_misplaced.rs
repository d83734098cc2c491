use tang_runtime::prelude::*;

#[uniform]
fn f(x: f32) -> f32 {
    x
}

fn main() {}
