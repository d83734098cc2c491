use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    if let 1.0 = x { 0.0 } else { x }
}

fn main() {}
