//! Transpose (a `permute` of the last two dimensions, which runs the tiled transpose
//! kernel), cat and split on the software adapter against CPU index arithmetic (exact:
//! they move bits), their backwards, and shape errors.

use tang_runtime::ops::{cat, cat_backward, permute, permute_backward, split, split_backward};
use tang_runtime::{Device, Error, Tensor};
use tang_testing::devices;

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2654435761).wrapping_add(seed) as f32 / 1e6)
        .collect()
}

/// The permutation that swaps the last two of `rank` dimensions.
fn swap_last(rank: usize) -> Vec<usize> {
    let mut dims: Vec<usize> = (0..rank).collect();
    dims.swap(rank - 2, rank - 1);
    dims
}

/// `t` with its last two dimensions swapped.
fn transpose(t: &Tensor) -> Result<Tensor, Error> {
    permute(t, &swap_last(t.shape().len()))
}

#[test]
fn transpose_awkward_shapes_and_batches() {
    for dev in devices() {
        for shape in [
            vec![1, 1],
            vec![1, 17],
            vec![17, 1],
            vec![33, 65],
            vec![127, 3],
            vec![3, 1000],
            vec![64, 96],
            vec![3, 33, 17],
            vec![2, 2, 5, 40],
            // more row tiles than one grid dimension holds (65,535)
            vec![2_100_000, 1],
        ] {
            let n: usize = shape.iter().product();
            let x = data(n, 7);
            let t = Tensor::from_slice(&dev, &x, &shape).unwrap();
            let y = transpose(&t).unwrap();
            let rank = shape.len();
            let (r, c) = (shape[rank - 2], shape[rank - 1]);
            let mut want_shape = shape.clone();
            want_shape.swap(rank - 2, rank - 1);
            assert_eq!(y.shape(), want_shape.as_slice());
            let got = y.to_vec().unwrap();
            for b in 0..n / (r * c) {
                for i in 0..r {
                    for j in 0..c {
                        assert_eq!(
                            got[b * r * c + j * r + i],
                            x[b * r * c + i * c + j],
                            "{shape:?} [{b}, {i}, {j}]"
                        );
                    }
                }
            }
            // backward is the inverse: transposing back restores the input exactly
            let back = permute_backward(&y, &swap_last(rank)).unwrap();
            assert_eq!(back.to_vec().unwrap(), x);
        }
    }
}

#[test]
fn transpose_moves_u32_bits() {
    for dev in devices() {
        let ids: Vec<u32> = (0..6).map(|i| 0xffff_fff0 + i).collect();
        let t = Tensor::from_u32(&dev, &ids, &[2, 3]).unwrap();
        assert_eq!(
            transpose(&t).unwrap().to_vec_u32().unwrap(),
            vec![ids[0], ids[3], ids[1], ids[4], ids[2], ids[5]]
        );
    }
}

/// CPU cat along `axis`.
fn concat_ref(parts: &[(Vec<f32>, Vec<usize>)], axis: usize) -> Vec<f32> {
    let outer: usize = parts[0].1[..axis].iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        for (d, s) in parts {
            let w: usize = s[axis..].iter().product();
            out.extend_from_slice(&d[o * w..(o + 1) * w]);
        }
    }
    out
}

#[test]
fn cat_and_split_any_axis() {
    for dev in devices() {
        // (base shape, axis, sizes along the axis)
        let cases: [(Vec<usize>, usize, Vec<usize>); 6] = [
            (vec![5], 0, vec![1, 3, 17]),
            (vec![3, 0], 1, vec![4, 8, 12]),
            (vec![0, 7], 0, vec![1, 33, 2]),
            (vec![2, 0, 5], 1, vec![3, 1, 65]),
            (vec![4, 3, 0], 2, vec![1, 2, 3]),
            (vec![0, 4, 4], 0, vec![2, 0, 3]),
        ];
        for (base, axis, sizes) in cases {
            let parts: Vec<(Vec<f32>, Vec<usize>)> = sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    let mut shape = base.clone();
                    shape[axis] = s;
                    (data(shape.iter().product(), i as u32), shape)
                })
                .collect();
            let tensors: Vec<Tensor> = parts
                .iter()
                .map(|(d, s)| Tensor::from_slice(&dev, d, s).unwrap())
                .collect();
            let refs: Vec<&Tensor> = tensors.iter().collect();
            let c = cat(&refs, axis).unwrap();
            let mut want_shape = base.clone();
            want_shape[axis] = sizes.iter().sum();
            assert_eq!(c.shape(), want_shape.as_slice());
            assert_eq!(
                c.to_vec().unwrap(),
                concat_ref(&parts, axis),
                "cat {base:?} axis {axis}"
            );
            let pieces = split(&c, axis, &sizes).unwrap();
            for ((p, (d, s)), k) in pieces.iter().zip(&parts).zip(0..) {
                assert_eq!(p.shape(), s.as_slice());
                assert_eq!(
                    &p.to_vec().unwrap(),
                    d,
                    "split piece {k} of {want_shape:?} axis {axis}"
                );
            }
            // backwards: each is the other's inverse
            let back = cat_backward(&c, &sizes, axis).unwrap();
            assert_eq!(back.len(), sizes.len());
            let piece_refs: Vec<&Tensor> = pieces.iter().collect();
            assert_eq!(
                split_backward(&piece_refs, axis).unwrap().to_vec().unwrap(),
                c.to_vec().unwrap()
            );
        }
    }
}

/// wgpu's runtime bounds checks on: same results.
#[test]
fn checked_mode_matches() {
    let dev = Device::with_options(tang_runtime::DeviceOptions {
        checked: true,
        ..Default::default()
    })
    .unwrap();
    let x = data(33 * 65, 3);
    let t = Tensor::from_slice(&dev, &x, &[33, 65]).unwrap();
    let y = transpose(&t).unwrap().to_vec().unwrap();
    assert_eq!(y[64 * 33 + 32], x[32 * 65 + 64]);
    let parts = split(&t, 1, &[1, 64]).unwrap();
    let refs: Vec<&Tensor> = parts.iter().collect();
    assert_eq!(cat(&refs, 1).unwrap().to_vec().unwrap(), x);
}

#[test]
fn shape_errors_say_what_was_expected() {
    for dev in devices() {
        let a = Tensor::zeros(&dev, &[2, 3]).unwrap();
        let b = Tensor::zeros(&dev, &[3, 3]).unwrap();
        let v = Tensor::zeros(&dev, &[4]).unwrap();
        assert!(matches!(
            permute(&v, &[1, 0]),
            Err(Error::ShapeMismatch { .. })
        ));
        let e = cat(&[&a, &b], 1).unwrap_err();
        assert!(
            e.to_string()
                .contains("expected [2, 3] in every dimension except dim 1"),
            "{e}"
        );
        assert_eq!(cat(&[&a, &b], 0).unwrap().shape(), &[5, 3]);
        assert!(matches!(
            cat(&[&a, &b], 2),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(cat(&[], 0), Err(Error::Arity { .. })));
        let ids = Tensor::from_u32(&dev, &[0; 6], &[2, 3]).unwrap();
        assert!(matches!(cat(&[&a, &ids], 0), Err(Error::DType { .. })));
        let e = split(&b, 0, &[1, 1]).unwrap_err();
        assert!(e.to_string().contains("do not sum to 3"), "{e}");
        assert!(e.to_string().contains("they sum to 2"), "{e}");
        assert!(matches!(
            split(&b, 3, &[3]),
            Err(Error::ShapeMismatch { .. })
        ));
    }
}
