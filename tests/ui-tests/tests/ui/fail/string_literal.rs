use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let _name = "scale";
    x
}

fn main() {}
