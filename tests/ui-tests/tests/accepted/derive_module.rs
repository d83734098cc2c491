//! `#[derive(Module)]` on a generic struct, a unit struct and a struct with skipped and
//! renamed fields: the impls compile and name the parameters as PyTorch would.

use tang_nn::Module;
use tang_nn::autograd::Tensor;

#[derive(Module)]
struct Wrapper<M: Module> {
    inner: M,
    #[module(skip)]
    scale: f32,
}

#[derive(Module)]
struct Identity;

#[derive(Module)]
struct Head {
    #[module(name = "c_proj")]
    proj: Vec<Tensor>,
    #[module(skip)]
    n_head: usize,
}

fn assert_module<M: Module>(_: &M) {}

pub fn main() {
    let head = Head {
        proj: Vec::new(),
        n_head: 4,
    };
    let w = Wrapper {
        inner: head,
        scale: 1.0,
    };
    assert_module(&w);
    assert_module(&Identity);
    assert!(w.named_parameters().is_empty());
    assert_eq!((w.scale, w.inner.n_head), (1.0, 4));
}
