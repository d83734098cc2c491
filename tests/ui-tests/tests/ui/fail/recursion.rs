use tang_runtime::prelude::*;

#[kernels]
mod k {
    #[kernel]
    pub fn fact(x: f32) -> f32 {
        if x <= 1.0 { 1.0 } else { x * fact(x - 1.0) }
    }
}

fn main() {}
