use tang_runtime::prelude::*;

#[kernel]
fn f(x: f32) -> f32
where
    f32: Copy,
{
    x * 2.0
}

fn main() {}
