use tang_runtime::prelude::*;

// Nothing sizes the launch: `launch` could only ever fail.
#[kernel]
fn none() -> f32 {
    1.0
}

#[kernel]
fn only_uniform(#[uniform] a: f32) -> f32 {
    a * 2.0
}

fn main() {}
