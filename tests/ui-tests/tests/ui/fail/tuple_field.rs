use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let t = (x, 2.0 * x);
    t.1
}

fn main() {}
