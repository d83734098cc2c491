use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32, e: f32) -> f32 {
    x.powi(e)
}

fn main() {}
