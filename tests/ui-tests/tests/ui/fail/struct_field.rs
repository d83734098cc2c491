use tang_runtime::prelude::*;

struct P {
    v: f32,
}

#[kernel]
fn f(x: f32) -> f32 {
    let p = P { v: x };
    p.v
}

fn main() {}
