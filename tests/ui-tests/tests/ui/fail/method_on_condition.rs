use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let c = x > 0.0;
    c.max(x)
}

fn main() {}
