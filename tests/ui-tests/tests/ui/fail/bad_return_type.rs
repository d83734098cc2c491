use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> i32 {
    x as i32
}

fn main() {}
