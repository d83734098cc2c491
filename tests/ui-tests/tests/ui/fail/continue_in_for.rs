use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let mut y = x;
    for i in 0..4 {
        if i == 2 {
            continue;
        }
        y *= 0.5;
    }
    y
}

fn main() {}
