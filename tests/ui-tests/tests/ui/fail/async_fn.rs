use tang_runtime::prelude::*;

#[kernel]
async fn f(x: f32) -> f32 {
    x
}

fn main() {}
