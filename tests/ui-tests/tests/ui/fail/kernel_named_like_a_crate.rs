use tang_runtime::prelude::*;

// The generated `mod core` would shadow the `core` crate in this module.
#[kernel]
fn core(x: f32) -> f32 {
    x * 2.0
}

#[kernel]
fn tang_runtime(x: f32) -> f32 {
    x + 1.0
}

fn main() {}
