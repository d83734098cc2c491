use tang_runtime::prelude::*;

#[kernel]
unsafe fn f(x: f32) -> f32 {
    x
}

fn main() {}
