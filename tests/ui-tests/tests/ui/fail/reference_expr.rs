use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let r = &x;
    *r
}

fn main() {}
