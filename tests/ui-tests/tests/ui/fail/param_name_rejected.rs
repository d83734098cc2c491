use tang_runtime::prelude::*;

// A WGSL buffer name must be ASCII: reported at the parameter, not the function.
#[kernel]
fn f(x: f32, größe: f32) -> f32 {
    x * größe
}

fn main() {}
