use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    unsafe { x }
}

fn main() {}
