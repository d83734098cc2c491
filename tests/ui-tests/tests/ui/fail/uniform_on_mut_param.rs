use tang_runtime::prelude::*;

#[kernel]
fn f(#[uniform] p: &mut f32, g: f32) {
    *p -= g;
}

fn main() {}
