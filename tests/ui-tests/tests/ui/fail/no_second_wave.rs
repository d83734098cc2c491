use tang_runtime::prelude::*;

// Only tang's errors: rustc does not report the unknown method or the wrong argument
// count again on the function tang re-emits.
#[kernel]
fn f(x: f32) -> f32 {
    x.pow(2)
}

#[kernels]
mod helpers {
    fn twice(a: f32) -> f32 {
        a * 2.0
    }

    #[kernel]
    pub fn g(x: f32) -> f32 {
        twice(x, x)
    }
}

fn main() {}
