//! Zero and non-finite constants reach the GPU as values its shader compiler cannot see.
//!
//! Drivers compile float arithmetic as if NaN, infinities and signed zeros never occur
//! (`../shared/notes/non-finite-on-gpus.md`): given the constant 0 they fold `x * 0.0` to
//! 0 and `x + 0.0` to `x`, which is wrong at an infinite or NaN `x` and at `-0.0`. A
//! constant the compiler can prove is 0 (`n & 0u`) is folded the same way; a word of the
//! launch's uniform that the host sets is not. Every case runs a kernel through one launch
//! path (`#[kernel]`, `#[fused_grad]`'s VJP, `Device::map`, a matmul epilogue) on the
//! adapter and compares the bits it returns with the CPU's, where the software adapter
//! (lavapipe) folded before the constants came from the uniform.

use tang_runtime::KernelDesc;
use tang_runtime::ops::{Epilogue, MatmulOptions, matmul_with};
use tang_runtime::prelude::*;

/// `x + 0.0`: `+0.0` at `-0.0` (IEEE), `-0.0` when folded to `x`.
#[kernel]
pub fn plus_zero(x: f32) -> f32 {
    x + 0.0
}

/// `x * -0.0`: `-0.0` at 1, `+0.0` when folded.
#[kernel]
pub fn times_neg_zero(x: f32) -> f32 {
    x * -0.0
}

/// `x * 0.0`: NaN at ±inf and NaN, 0 when folded.
#[kernel]
pub fn times_zero(x: f32) -> f32 {
    x * 0.0
}

/// An unrolled loop whose first term is `x * 0.0`: NaN at ±inf.
#[kernel]
pub fn unrolled(x: f32) -> f32 {
    let mut s = 0.0;
    for i in 0..=3 {
        s += x * i as f32;
    }
    s
}

/// A derivative that is the constant 0: the VJP `g * 0.0` is NaN where `g` is infinite.
#[fused_grad]
pub fn flat(x: f32) -> f32 {
    x * 0.0 + 1.0
}

/// Inputs that tell IEEE arithmetic from the folded kind.
const INPUTS: [f32; 8] = [
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    -0.0,
    0.0,
    1.0,
    -2.5,
    3.0e38,
];

/// The bits, with every NaN the same (NaN payloads are not compared).
fn bits(v: f32) -> u32 {
    if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() }
}

/// Every input where the GPU's bits differ from the CPU's, described.
fn mismatches(what: &str, inputs: &[f32], gpu: &[f32], cpu: impl Fn(f32) -> f32) -> Vec<String> {
    inputs
        .iter()
        .zip(gpu)
        .filter(|&(&x, &g)| bits(g) != bits(cpu(x)))
        .map(|(&x, &g)| format!("{what} at {x:?}: GPU {g:?}, CPU {:?}", cpu(x)))
        .collect()
}

/// Panics listing every mismatch of every case.
fn assert_none(wrong: Vec<String>) {
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn device_and_input() -> (Device, Tensor) {
    let dev = Device::new().unwrap();
    let x = Tensor::from_slice(&dev, &INPUTS, &[INPUTS.len()]).unwrap();
    (dev, x)
}

/// A kernel's name for messages, its descriptor and its CPU twin.
type Case = (&'static str, &'static KernelDesc, fn(f32) -> f32);

#[test]
fn kernel_constants_are_not_folded() {
    let (dev, x) = device_and_input();
    let cases: [Case; 4] = [
        ("x + 0.0", &plus_zero::KERNEL, plus_zero),
        ("x * -0.0", &times_neg_zero::KERNEL, times_neg_zero),
        ("x * 0.0", &times_zero::KERNEL, times_zero),
        ("unrolled 0..=3", &unrolled::KERNEL, unrolled),
    ];
    let mut wrong = Vec::new();
    for (what, kernel, cpu) in cases {
        let out = dev.launch(kernel, &[&x], &[], &[]).unwrap();
        wrong.extend(mismatches(what, &INPUTS, &out[0].to_vec().unwrap(), cpu));
    }
    // The typed launchers go through the same path.
    let y = times_zero::launch(&dev, &x).unwrap();
    wrong.extend(mismatches(
        "times_zero::launch",
        &INPUTS,
        &y.to_vec().unwrap(),
        times_zero,
    ));
    assert_none(wrong);
}

#[test]
fn fused_grad_constants_are_not_folded() {
    let (dev, g) = device_and_input();
    let x = Tensor::full(&dev, &[INPUTS.len()], 1.0).unwrap();
    let [dx] = flat::launch_vjp(&dev, &x, &g).unwrap();
    assert_none(mismatches(
        "VJP of x * 0.0 + 1.0",
        &INPUTS,
        &dx.to_vec().unwrap(),
        |g| flat::vjp(1.0, g)[0],
    ));
}

#[test]
fn map_constants_are_not_folded() {
    let (dev, x) = device_and_input();
    let zero = dev.map(&[&x], |v| v[0] * 0.0).unwrap();
    let mut wrong = mismatches("map x * 0.0", &INPUTS, &zero.to_vec().unwrap(), |x| x * 0.0);
    let plus = dev.map(&[&x], |v| v[0] + 0.0).unwrap();
    wrong.extend(mismatches(
        "map x + 0.0",
        &INPUTS,
        &plus.to_vec().unwrap(),
        |x| x + 0.0,
    ));
    let neg = dev.map(&[&x], |v| v[0] * -0.0).unwrap();
    wrong.extend(mismatches(
        "map x * -0.0",
        &INPUTS,
        &neg.to_vec().unwrap(),
        |x| x * -0.0,
    ));
    assert_none(wrong);
}

#[test]
fn epilogue_constants_are_not_folded() {
    let (dev, x) = device_and_input();
    // C = x · [1] is x itself (one column, k = 1), then the epilogue multiplies by 0.
    let a = x.reshape(&[INPUTS.len(), 1]).unwrap();
    let b = Tensor::full(&dev, &[1, 1], 1.0).unwrap();
    let epi = Epilogue::from_traced(&tang_runtime::tang_expr::trace(1, |v| v[0] * 0.0)).unwrap();
    let with = |epilogue| MatmulOptions {
        epilogue,
        ..MatmulOptions::default()
    };
    // The product's own value at each element (the GPU's, so how the adapter rounds or
    // signs a one-term sum does not matter), and the epilogue's on top.
    let plain = matmul_with(&a, &b, &with(None)).unwrap().to_vec().unwrap();
    let c = matmul_with(&a, &b, &with(Some(&epi))).unwrap();
    assert_none(mismatches(
        "epilogue x * 0.0",
        &plain,
        &c.to_vec().unwrap(),
        |x| x * 0.0,
    ));
}
