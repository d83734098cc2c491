use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    const K: f32 = 2.0;
    x * K
}

fn main() {}
