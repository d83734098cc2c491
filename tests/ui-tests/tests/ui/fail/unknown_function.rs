use tang_runtime::prelude::*;

fn helper(x: f32) -> f32 {
    x * 2.0
}

#[kernel]
fn f(x: f32) -> f32 {
    helper(x) + 1.0
}

fn main() {}
