use tang_runtime::prelude::*;

#[kernel]
fn f<T: Into<f32>>(x: f32) -> f32 {
    x
}

fn main() {}
