use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    if x < 0.0 {
        return 0.0;
    }
    x
}

fn main() {}
