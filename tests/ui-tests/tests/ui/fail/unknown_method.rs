use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    x.log10()
}

fn main() {}
