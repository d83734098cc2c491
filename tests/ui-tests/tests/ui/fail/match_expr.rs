use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    match x > 0.0 {
        true => x,
        false => 0.0,
    }
}

fn main() {}
