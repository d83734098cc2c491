use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let mut y = x;
    while y > 1.0 {
        y *= 0.5;
    }
    y
}

fn main() {}
