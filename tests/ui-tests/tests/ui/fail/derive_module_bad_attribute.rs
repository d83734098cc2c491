use tang_nn::Module;
use tang_nn::autograd::Tensor;

#[derive(Module)]
struct Block {
    #[module(frozen)]
    weight: Tensor,
    #[module(name = "ln.1")]
    norm: Tensor,
    #[module(name = 3)]
    bias: Tensor,
}

fn main() {}
