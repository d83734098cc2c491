use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let mut y = x;
    for _ in 0..4 {
        if y < 1.0 {
            break;
        }
        y *= 0.5;
    }
    y
}

fn main() {}
