use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let sq = |v: f32| v * v;
    sq(x)
}

fn main() {}
