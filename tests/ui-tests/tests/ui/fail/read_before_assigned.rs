use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let y;
    if x > 0.0 {
        y = x;
    }
    y
}

fn main() {}
