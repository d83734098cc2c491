use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let mut y = x;
    loop {
        y *= 0.5;
        if y < 1.0 {
            break;
        }
    }
    y
}

fn main() {}
