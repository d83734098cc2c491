use tang_nn::Module;
use tang_nn::autograd::Tensor;

#[derive(Module)]
enum Layer {
    Dense { weight: Tensor },
    Identity,
}

fn main() {}
