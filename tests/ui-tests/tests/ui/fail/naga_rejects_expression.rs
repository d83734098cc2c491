use tang_runtime::prelude::*;

// naga's constant evaluator rejects the infinite product: the error underlines the
// expression that produced it, not the function's name.
#[kernel]
fn f(x: f32) -> f32 {
    let big = 3e38 * 10.0;
    x + big
}

fn main() {}
