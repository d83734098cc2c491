//! Comparisons giving a mask: `eq`, `ne`, `lt`, `le`, `gt`, `ge` of two f32 or two u32
//! tensors whose shapes broadcast. A mask is a u32 tensor of 0s and 1s (PyTorch returns
//! `bool`; tang has no bool tensors): cast it with [`crate::ops::to_dtype`] for f32 arithmetic.
//! As in IEEE 754 and PyTorch, a comparison with NaN is false, except `ne`, which is true.

use crate::ops::check;
use crate::ops::shape::broadcast::expand;
use crate::size::broadcast_shapes;
use crate::spec::{Slot, Source, Spec, launch_threads, params};
use crate::wgsl::{IS_NAN_WGSL, per_element};
use crate::{DType, Error, Tensor};

params! {
    /// `n` elements.
    struct CompareParams { n: u32 }
}

/// `OP`: 0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge; `FLOAT = 1` compares the words as f32. NaN is
/// tested on the bits (a driver may assume float comparisons never see NaN).
static COMPARE: Spec<CompareParams> = Spec::new(
    "compare",
    &[IS_NAN_WGSL],
    &[
        Slot::Read("a", "array<u32>"),
        Slot::Read("b", "array<u32>"),
        Slot::ReadWrite("out", "array<u32>"),
    ],
    concat!(
        "override OP: u32 = 0u;
override FLOAT: u32 = 1u;

fn compare(x: u32, y: u32) -> bool {
    if (FLOAT == 1u) {
        if (is_nan(x) || is_nan(y)) { return OP == 1u; }
        let u = bitcast<f32>(x);
        let v = bitcast<f32>(y);
        switch OP {
            case 0u: { return u == v; }
            case 1u: { return u != v; }
            case 2u: { return u < v; }
            case 3u: { return u <= v; }
            case 4u: { return u > v; }
            default: { return u >= v; }
        }
    }
    switch OP {
        case 0u: { return x == y; }
        case 1u: { return x != y; }
        case 2u: { return x < y; }
        case 3u: { return x <= y; }
        case 4u: { return x > y; }
        default: { return x >= y; }
    }
}

",
        per_element!("out[i] = select(0u, 1u, compare(a[i], b[i]));"),
    ),
);

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![COMPARE.source()]
}

/// The comparisons, in the kernel's `OP` order.
#[derive(Clone, Copy)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    fn name(self) -> &'static str {
        ["eq", "ne", "lt", "le", "gt", "ge"][self as usize]
    }
}

/// `a` expanded to `shape` unless it already has it.
fn expanded(a: &Tensor, shape: &[usize]) -> Result<Tensor, Error> {
    if a.shape() == shape {
        Ok(a.clone())
    } else {
        expand(a, shape)
    }
}

fn compare(a: &Tensor, b: &Tensor, cmp: Cmp) -> Result<Tensor, Error> {
    let op = cmp.name();
    check::same_device(op, a.device(), &[("other", b)])?;
    check::same_dtype(op, a, b)?;
    let shape = broadcast_shapes(&[a.shape(), b.shape()]).map_err(|_| check::mismatch(op, format!(
            "shapes {:?} and {:?} do not broadcast (sizes must be equal or 1, aligned from the right)",
            a.shape(),
            b.shape()
        )))?;
    let (a, b) = (expanded(a, &shape)?, expanded(b, &shape)?);
    let dev = a.device();
    let out = dev.empty(&shape, DType::U32)?;
    let n = crate::size::fits_u32(op, "elements", out.len())?;
    let params = CompareParams { n };
    let float = if a.dtype() == DType::F32 { 1.0 } else { 0.0 };
    let constants = [("OP", f64::from(cmp as u32)), ("FLOAT", float)];
    launch_threads(op, dev, &COMPARE, &constants, &params, n, &[&a, &b, &out])?;
    Ok(out)
}

/// `a == b` elementwise, a u32 mask (see the module doc).
///
/// # Errors
/// [`Error::ShapeMismatch`] when the shapes do not broadcast, [`Error::DType`] when the
/// dtypes differ, [`Error::DeviceMismatch`], [`Error::TooLarge`].
pub fn eq(a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
    compare(a, b, Cmp::Eq)
}

/// `a != b` elementwise (true where either is NaN), a u32 mask.
///
/// # Errors
/// As [`eq`].
pub fn ne(a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
    compare(a, b, Cmp::Ne)
}

/// `a < b` elementwise, a u32 mask.
///
/// # Errors
/// As [`eq`].
pub fn lt(a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
    compare(a, b, Cmp::Lt)
}

/// `a <= b` elementwise, a u32 mask.
///
/// # Errors
/// As [`eq`].
pub fn le(a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
    compare(a, b, Cmp::Le)
}

/// `a > b` elementwise, a u32 mask.
///
/// # Errors
/// As [`eq`].
pub fn gt(a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
    compare(a, b, Cmp::Gt)
}

/// `a >= b` elementwise, a u32 mask.
///
/// # Errors
/// As [`eq`].
pub fn ge(a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
    compare(a, b, Cmp::Ge)
}
