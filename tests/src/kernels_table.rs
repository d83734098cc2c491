//! Every `#[fused_grad]` kernel of [`super`] behind one uniform interface (slices in,
//! vectors out), so one test loop checks them all: CPU function, f64 reference, CPU twins
//! of GRAD and VJP, and the GPU launchers.

use tang_runtime::{Device, Error, KernelDesc, Tensor};

use super::composite;

/// A CPU twin of GRAD behind slices: the values, then the partials (output-major).
pub type GradFn = fn(&[f32]) -> (Vec<f32>, Vec<f32>);
/// A GPU launcher behind slices: tensors in, output tensors out.
pub type LaunchFn = fn(&Device, &[&Tensor]) -> Result<Vec<Tensor>, Error>;
/// A VJP launcher behind slices: inputs and upstream gradients in, input gradients out.
pub type LaunchVjpFn = fn(&Device, &[&Tensor], &[&Tensor]) -> Result<Vec<Tensor>, Error>;

/// One `#[fused_grad]` kernel, with its uniforms (if any) fixed.
pub struct FusedCase {
    /// The function's name.
    pub name: &'static str,
    /// Number of element inputs.
    pub inputs: usize,
    /// Number of outputs.
    pub outputs: usize,
    /// The differentiated inputs (indices into the inputs).
    pub wrt: &'static [usize],
    /// The Rust function itself (the CPU reference).
    pub value: fn(&[f32]) -> Vec<f32>,
    /// `f::value_f64`: the lowered graph evaluated in f64.
    pub value_f64: fn(&[f64]) -> Vec<f64>,
    /// `f::grad`: the values, then the partials (output-major).
    pub grad: GradFn,
    /// `f::vjp`: inputs and one upstream gradient per output in, one gradient per `wrt`
    /// input out.
    pub vjp: fn(&[f32], &[f32]) -> Vec<f32>,
    /// `KERNEL`, `GRAD`, `VJP`.
    pub descs: [&'static KernelDesc; 3],
    /// `f::launch`, outputs flattened.
    pub launch: LaunchFn,
    /// `f::launch_grad`, values then partials.
    pub launch_grad: LaunchFn,
    /// `f::launch_vjp`: inputs, then upstream gradients.
    pub launch_vjp: LaunchVjpFn,
}

fn t<'a>(ts: &[&'a Tensor], i: usize) -> Result<&'a Tensor, Error> {
    ts.get(i).copied().ok_or(Error::Arity {
        op: "test table".into(),
        what: "tensors",
        expected: i + 1,
        got: ts.len(),
    })
}

/// A one-input, one-output kernel `$f` at `$($p)::*`.
macro_rules! unary {
    ($($p:ident)::*) => {{
        use $($p)::* as f;
        FusedCase {
            name: stringify!($($p)::*),
            inputs: 1,
            outputs: 1,
            wrt: &[0],
            value: |x| vec![f(x[0])],
            value_f64: |x| vec![f::value_f64(x[0])],
            grad: |x| {
                let (v, d) = f::grad(x[0]);
                (vec![v], d.to_vec())
            },
            vjp: |x, g| f::vjp(x[0], g[0]).to_vec(),
            descs: [&f::KERNEL, &f::GRAD, &f::VJP],
            launch: |dev, x| Ok(vec![f::launch(dev, t(x, 0)?)?]),
            launch_grad: |dev, x| {
                let (v, d) = f::launch_grad(dev, t(x, 0)?)?;
                Ok(std::iter::once(v).chain(d).collect())
            },
            launch_vjp: |dev, x, g| Ok(f::launch_vjp(dev, t(x, 0)?, t(g, 0)?)?.to_vec()),
        }
    }};
}

/// A two-input, one-output kernel; `$u` are its uniforms' fixed values.
macro_rules! binary {
    ($($p:ident)::*, wrt = $wrt:expr $(, $u:expr)*) => {{
        use $($p)::* as f;
        FusedCase {
            name: stringify!($($p)::*),
            inputs: 2,
            outputs: 1,
            wrt: $wrt,
            value: |x| vec![f(x[0], x[1] $(, $u)*)],
            value_f64: |x| vec![f::value_f64(x[0], x[1] $(, $u as f64)*)],
            grad: |x| {
                let (v, d) = f::grad(x[0], x[1] $(, $u)*);
                (vec![v], d.to_vec())
            },
            vjp: |x, g| f::vjp(x[0], x[1] $(, $u)*, g[0]).to_vec(),
            descs: [&f::KERNEL, &f::GRAD, &f::VJP],
            launch: |dev, x| Ok(vec![f::launch(dev, t(x, 0)?, t(x, 1)? $(, $u)*)?]),
            launch_grad: |dev, x| {
                let (v, d) = f::launch_grad(dev, t(x, 0)?, t(x, 1)? $(, $u)*)?;
                Ok(std::iter::once(v).chain(d).collect())
            },
            launch_vjp: |dev, x, g| {
                Ok(f::launch_vjp(dev, t(x, 0)?, t(x, 1)? $(, $u)*, t(g, 0)?)?.to_vec())
            },
        }
    }};
}

/// Every `#[fused_grad]` kernel of the library.
pub fn fused_cases() -> Vec<FusedCase> {
    vec![
        unary!(super::relu),
        unary!(super::leaky_relu),
        unary!(super::elu),
        unary!(super::selu),
        unary!(super::gelu_tanh),
        unary!(super::silu),
        unary!(super::mish),
        unary!(super::softplus),
        unary!(super::sigmoid),
        unary!(super::tanh),
        unary!(super::hardtanh),
        unary!(super::hardsigmoid),
        unary!(super::hardswish),
        unary!(super::softsign),
        unary!(super::log_sigmoid),
        unary!(composite::gelu_erf),
        unary!(composite::expm1_poly),
        binary!(super::mse, wrt = &[0, 1]),
        binary!(super::huber, wrt = &[0, 1], 1.0f32),
        binary!(super::smooth_l1, wrt = &[0, 1], 0.5f32),
        binary!(super::log_cosh, wrt = &[0, 1]),
        binary!(super::bce_with_logits, wrt = &[0]),
        binary!(composite::swiglu, wrt = &[0, 1]),
        FusedCase {
            name: "composite::softmax2",
            inputs: 2,
            outputs: 2,
            wrt: &[0, 1],
            value: |x| {
                let (a, b) = composite::softmax2(x[0], x[1]);
                vec![a, b]
            },
            value_f64: |x| {
                let (a, b) = composite::softmax2::value_f64(x[0], x[1]);
                vec![a, b]
            },
            grad: |x| {
                let ((a, b), [da, db]) = composite::softmax2::grad(x[0], x[1]);
                (vec![a, b], da.iter().chain(&db).copied().collect())
            },
            vjp: |x, g| composite::softmax2::vjp(x[0], x[1], g[0], g[1]).to_vec(),
            descs: [
                &composite::softmax2::KERNEL,
                &composite::softmax2::GRAD,
                &composite::softmax2::VJP,
            ],
            launch: |dev, x| {
                let (a, b) = composite::softmax2::launch(dev, t(x, 0)?, t(x, 1)?)?;
                Ok(vec![a, b])
            },
            launch_grad: |dev, x| {
                let ((a, b), [da, db]) = composite::softmax2::launch_grad(dev, t(x, 0)?, t(x, 1)?)?;
                Ok([a, b].into_iter().chain(da).chain(db).collect())
            },
            launch_vjp: |dev, x, g| {
                Ok(
                    composite::softmax2::launch_vjp(dev, t(x, 0)?, t(x, 1)?, t(g, 0)?, t(g, 1)?)?
                        .to_vec(),
                )
            },
        },
    ]
}

/// The in-place `#[kernel]` optimizer updates' descriptors (checked by naga in tests).
pub fn optimizer_descs() -> Vec<&'static KernelDesc> {
    vec![
        &super::sgd_momentum::KERNEL,
        &super::adam::KERNEL,
        &super::adamw::KERNEL,
    ]
}
