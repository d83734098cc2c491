use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32 {
    let y = x.sqrt()?;
    y
}

fn main() {}
