use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    println!("{x}");
    x
}

fn main() {}
