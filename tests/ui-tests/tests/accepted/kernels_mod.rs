use tang_runtime::prelude::*;

#[kernels]
mod k {
    use tang_runtime::prelude::*;

    fn square(x: f32) -> f32 {
        x * x
    }

    fn both(x: f32) -> (f32, f32) {
        (square(x), -x)
    }

    #[fused_grad]
    pub fn energy(x: f32, y: f32) -> f32 {
        let (a, b) = both(x);
        a + square(y) + b.sigmoid()
    }

    #[kernel]
    pub fn plain(x: f32) -> f32 {
        energy(x, 1.0) * 2.0
    }
}

pub fn main() {
    let (v, [dx, dy]) = k::energy::grad(1.0, 2.0);
    assert_eq!(v, k::energy(1.0, 2.0));
    assert!((dy - 4.0).abs() < 1e-6);
    let s = (-1.0f32).sigmoid();
    assert!((dx - (2.0 - s * (1.0 - s))).abs() < 1e-6);
    assert_eq!(k::plain(1.0), 2.0 * k::energy(1.0, 1.0));
    assert!(k::plain::WGSL.contains("tang_sigmoid"));
}
