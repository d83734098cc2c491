//! The layout ops on f16 tensors (two elements per 32-bit word) against the same ops on
//! f32 (exact: they move elements), at sizes that pair into words and sizes that do not:
//! permute (the strided copy and the transposes), expand, narrow, cat, split and
//! slice_scatter; sum_to_shape (the backward of broadcasting) rounds once; and the ops
//! that move whole words refuse f16 with an error.

use tang_runtime::ops::{
    cat, expand, narrow, pack, permute, slice_scatter, slice_scatter_, split, sum_to_shape,
    to_dtype,
};
use tang_runtime::{DType, Device, Error, Tensor};
use tang_testing::devices;

/// `shape` filled with distinct f16-representable values (multiples of 0.5 below 500).
fn tensor(dev: &Device, shape: &[usize], seed: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| ((i * 7 + seed) % 1000) as f32 * 0.5)
        .collect();
    Tensor::from_slice(dev, &v, shape).unwrap()
}

fn half(t: &Tensor) -> Tensor {
    to_dtype(t, DType::F16).unwrap()
}

/// `f16` (an f16 result) equals `f32` (the f32 result) element for element.
fn same(what: &str, f16: &Tensor, f32: &Tensor) {
    assert_eq!(f16.dtype(), DType::F16, "{what}: dtype");
    assert_eq!(f16.shape(), f32.shape(), "{what}: shape");
    assert_eq!(
        f16.to_vec().unwrap(),
        f32.to_vec().unwrap(),
        "{what}: values"
    );
}

#[test]
fn permutes_and_transposes_pair_or_not() {
    for dev in devices() {
        for (shape, dims) in [
            (vec![2, 3, 4, 8], vec![0, 2, 1, 3]), // heads: pairs into words
            (vec![2, 3, 5, 7], vec![0, 2, 1, 3]), // odd widths: element by element
            (vec![3, 5], vec![1, 0]),             // a transpose
            (vec![2, 6, 8], vec![0, 2, 1]),       // a batch of transposes
            (vec![3, 1, 5, 2], vec![3, 2, 1, 0]),
            (vec![1], vec![0]),
        ] {
            let x = tensor(&dev, &shape, 3);
            let want = permute(&x, &dims).unwrap();
            let got = permute(&half(&x), &dims).unwrap();
            same(&format!("permute {shape:?} by {dims:?}"), &got, &want);
        }
    }
}

#[test]
fn expand_narrow_cat_split_and_scatter() {
    for dev in devices() {
        for cols in [1usize, 3, 4, 7, 8] {
            let x = tensor(&dev, &[5, cols], 1);
            let xh = half(&x);
            let row = tensor(&dev, &[1, cols], 2);
            same(
                "expand",
                &expand(&half(&row), &[5, cols]).unwrap(),
                &expand(&row, &[5, cols]).unwrap(),
            );
            for start in 0..cols.min(3) {
                let len = cols - start;
                same(
                    &format!("narrow cols {cols} from {start}"),
                    &narrow(&xh, 1, start, len).unwrap(),
                    &narrow(&x, 1, start, len).unwrap(),
                );
            }
            let y = tensor(&dev, &[5, 3], 9);
            same(
                "cat",
                &cat(&[&xh, &half(&y)], 1).unwrap(),
                &cat(&[&x, &y], 1).unwrap(),
            );
            let got = split(&xh, 0, &[2, 3]).unwrap();
            let want = split(&x, 0, &[2, 3]).unwrap();
            for (g, w) in got.iter().zip(&want) {
                same("split", g, w);
            }
            let src = tensor(&dev, &[5, 1], 4);
            same(
                "slice_scatter",
                &slice_scatter(&xh, &half(&src), 1, cols - 1).unwrap(),
                &slice_scatter(&x, &src, 1, cols - 1).unwrap(),
            );
        }
    }
}

#[test]
fn word_moving_ops_refuse_f16() {
    for dev in devices() {
        let part = half(&tensor(&dev, &[3], 0));
        let flat = half(&tensor(&dev, &[8], 0));
        let err = pack(&[&part], &flat, &[0]).unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
        assert!(err.to_string().contains("to_dtype"), "{err}");
    }
}

/// One summed run (one reduction) and two (summed in f32, rounded at the end): either way
/// the f32 sum of the same values rounded once.
#[test]
fn sum_to_shape_rounds_once() {
    for dev in devices() {
        for (from, to) in [
            (vec![6, 7], vec![7]),
            (vec![6, 7], vec![6, 1]),
            (vec![3, 5, 4], vec![1, 5, 1]),
            (vec![2, 3, 5, 4], vec![3, 1, 4]),
        ] {
            let g = tensor(&dev, &from, 5);
            let want = half(&sum_to_shape(&g, &to).unwrap());
            let got = sum_to_shape(&half(&g), &to).unwrap();
            assert_eq!(got.dtype(), DType::F16, "{from:?} -> {to:?}");
            assert_eq!(
                got.to_vec_f16().unwrap(),
                want.to_vec_f16().unwrap(),
                "{from:?} -> {to:?}"
            );
        }
    }
}

/// An odd run written in place from an even element: the copy writes whole words and the
/// word it shares with the element after the run keeps that element.
#[test]
fn an_odd_run_in_place_keeps_its_neighbour() {
    for dev in devices() {
        let x = tensor(&dev, &[9], 1);
        let src = tensor(&dev, &[3], 2);
        let xh = half(&x);
        slice_scatter_(&xh, &half(&src), 0, 2).unwrap();
        let want = slice_scatter(&x, &src, 0, 2).unwrap();
        same("slice_scatter_ of 3 at 2", &xh, &want);
    }
}
