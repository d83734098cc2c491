use tang_nn::Module;
use tang_nn::autograd::Tensor;

#[derive(Module)]
struct Pair(Tensor, Tensor);

fn main() {}
