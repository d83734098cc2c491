use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32, n: i32) -> f32 {
    x.powi(n)
}

fn main() {}
