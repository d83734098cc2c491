use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let y = x;
    y = y * 2.0;
    y
}

fn main() {}
