use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32, #[uniform] n: f32) -> f32 {
    let mut acc = x;
    for _ in 0..(n as usize) {
        acc *= x;
    }
    acc
}

fn main() {}
