use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32, #[uniform] lr: f32) -> f32 {
    let y = x.log10() * lr;
    let z = y % 2.0;
    while y > 0.0 {}
    z
}

fn main() {}
