use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let a = [x, 2.0 * x];
    a[1]
}

fn main() {}
