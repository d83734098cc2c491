//! Sizes from users never panic, wrap or abort, and empty inputs never expose pool memory:
//! each case here panicked, aborted, returned a wrong `Ok` or read uninitialised memory
//! before sizes went through one checked type.

use tang_runtime::ops;
use tang_runtime::{DType, Device, Error, Tensor};
use tang_testing::device;

/// A `TooLarge` error whose message says what was asked and the limit, never the
/// wrapped-around `u64::MAX` as a number.
fn assert_too_large(r: Result<impl std::fmt::Debug, Error>, asked: &str) {
    let e = r.expect_err("expected TooLarge");
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains(asked), "{msg} should mention {asked}");
    assert!(msg.contains("the limit is"), "{msg}");
    // (The shape in `what` may hold `usize::MAX` itself: that is what was asked.)
    for amount in [
        "asked for 18446744073709551615",
        "limit is 18446744073709551615",
    ] {
        assert!(!msg.contains(amount), "{msg}");
    }
}

#[test]
fn matmul_tile_of_zeros_is_an_error_not_a_panic() {
    let dev = device();
    let zero = ops::TileConfig {
        bm: 0,
        bn: 0,
        bk: 0,
        tm: 0,
        tn: 0,
    };
    assert!(!zero.is_valid());
    assert_eq!(zero.threads(), 0);
    let huge = ops::TileConfig {
        bm: u32::MAX,
        bn: u32::MAX,
        bk: u32::MAX,
        tm: 4,
        tn: 4,
    };
    assert!(!huge.is_valid());
    assert_eq!(huge.workgroup_bytes(), u32::MAX);
    let a = Tensor::from_slice(&dev, &[1.0; 4], &[2, 2]).unwrap();
    for tile in [zero, huge] {
        let opts = ops::MatmulOptions {
            tile: Some(tile),
            ..Default::default()
        };
        // A tile the generator cannot build is a bad argument (a valid tile over the
        // device's limits is TooLarge).
        let e = ops::matmul_with(&a, &a, &opts).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    }
}

#[test]
fn huge_shapes_are_too_large_before_the_pool_rounds_them() {
    let dev = device();
    assert_too_large(dev.empty(&[3 << 60], DType::F32), "[3458764513820540928]");
    // 2^64 - 4 bytes: the pool's size class of it would overflow.
    assert_too_large(
        Tensor::zeros(&dev, &[(1 << 62) - 1]),
        "asked for 18446744073709551612",
    );
    assert_too_large(Tensor::zeros(&dev, &[1 << 62]), "more than 2^64 - 1");
    assert_too_large(
        dev.empty(&[usize::MAX, 2], DType::U32),
        "[18446744073709551615, 2]",
    );
    // Past the device limit but not overflowing: the exact byte count is shown.
    let limit = dev.info().limits.max_buffer_size;
    let n = (limit / 4 + 1) as usize;
    assert_too_large(dev.empty(&[n], DType::F32), &((n as u64) * 4).to_string());
}

#[test]
fn full_checks_the_limit_before_filling_host_memory() {
    let dev = device();
    // 2^36 floats would be 256 GiB of host memory if filled before the check.
    assert_too_large(Tensor::full(&dev, &[1 << 36], 1.0), "274877906944");
    let t = Tensor::full(&dev, &[3], 2.5).unwrap();
    assert_eq!(t.to_vec().unwrap(), [2.5; 3]);
}

#[test]
fn empty_shapes_with_huge_dims_are_alike_in_any_order() {
    let dev = device();
    let big = 1usize << 40;
    for shape in [[big, 0, big], [big, big, 0], [0, big, big]] {
        let t = dev.empty(&shape, DType::F32).unwrap();
        assert_eq!(t.len(), 0);
        assert!(t.to_vec().unwrap().is_empty());
    }
    let t = dev.empty(&[usize::MAX, 2, 0], DType::F32).unwrap();
    assert_eq!((t.len(), t.bytes()), (0, 0));
    assert_eq!(t.reshape(&[0]).unwrap().shape(), [0]);
    let e = t.reshape(&[usize::MAX, 3]).unwrap_err();
    assert!(e.to_string().contains("more than 2^64 - 1"), "{e}");
}

#[test]
fn sum_of_an_empty_axis_with_huge_neighbours_is_too_large() {
    let dev = device();
    let big = 1usize << 40;
    let x = dev.empty(&[big, 0, big], DType::F32).unwrap();
    // The result would be [2^40, 2^40]: an error, not a panic or a wrapped shape.
    assert_too_large(ops::sum(&x, 1), "[1099511627776, 1099511627776]");
    // Reducing an axis next to the zero keeps the result empty.
    assert_eq!(ops::sum(&x, 0).unwrap().shape(), [0, big]);
}

#[test]
fn cat_and_split_with_wrapping_sizes() {
    let dev = device();
    let a = dev.empty(&[usize::MAX, 0], DType::F32).unwrap();
    let b = dev.empty(&[1, 0], DType::F32).unwrap();
    assert_too_large(ops::cat(&[&a, &b], 0), "length of dim 0");
    // Empty pieces with a huge axis concatenate along the other axis.
    let c = ops::cat(&[&a, &a], 1).unwrap();
    assert_eq!(c.shape(), [usize::MAX, 0]);
    let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[4]).unwrap();
    let e = ops::split(&x, 0, &[usize::MAX, 5]).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("do not sum to 4"), "{msg}");
    assert!(msg.contains("more than 2^64 - 1"), "{msg}");
    let parts = ops::split(&x, 0, &[1, 3]).unwrap();
    assert_eq!(parts[1].to_vec().unwrap(), [2.0, 3.0, 4.0]);
    let empty = dev.empty(&[usize::MAX, 0], DType::F32).unwrap();
    let pieces = ops::split(&empty, 0, &[usize::MAX - 1, 1]).unwrap();
    assert_eq!(pieces[0].shape(), [usize::MAX - 1, 0]);
}

#[test]
fn attention_decode_past_that_overflows_is_rejected() {
    let dev = device();
    let q = Tensor::from_slice(&dev, &[0.5; 8], &[1, 1, 1, 8]).unwrap();
    let kv = Tensor::from_slice(&dev, &[0.25; 32], &[1, 1, 4, 8]).unwrap();
    for past in [usize::MAX, usize::MAX - 1, 4] {
        let e = ops::attention_decode(&q, &kv, &kv, past, None).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
        assert!(e.to_string().contains("exceed the cache capacity"), "{e}");
    }
    let o = ops::attention_decode(&q, &kv, &kv, 3, None).unwrap();
    assert_eq!(o.to_vec().unwrap(), [0.25; 8]);
}

/// Fills the pool with buffers of non-NaN garbage, so that an output taken from the pool
/// and never written would show it.
fn dirty_pool(dev: &Device) {
    for n in [1, 2, 3, 4, 6, 8, 16, 64] {
        drop(Tensor::full(dev, &[n], 12345.0).unwrap());
    }
    dev.sync().unwrap();
}

#[test]
fn norms_over_zero_columns_give_nan_stats() {
    let dev = device();
    let x = dev.empty(&[3, 0], DType::F32).unwrap();
    let w = dev.empty(&[0], DType::F32).unwrap();
    for rms in [false, true] {
        dirty_pool(&dev);
        let out = if rms {
            ops::rms_norm(&x, &w, 1e-5).unwrap()
        } else {
            ops::layer_norm(&x, &w, &w, 1e-5).unwrap()
        };
        assert_eq!(out.y.shape(), [3, 0]);
        let stats = out.stats.to_vec().unwrap();
        assert_eq!(stats.len(), 6);
        assert!(stats.iter().all(|v| v.is_nan()), "rms {rms}: {stats:?}");
    }
}

#[test]
fn cross_entropy_with_no_classes_gives_nan_loss() {
    let dev = device();
    dirty_pool(&dev);
    let logits = dev.empty(&[3, 0], DType::F32).unwrap();
    let targets = Tensor::from_u32(&dev, &[0, 1, 7], &[3]).unwrap();
    let ce = ops::cross_entropy(&logits, &targets, Some(7)).unwrap();
    assert!(ce.loss.item().unwrap().is_nan());
    let rows = ce.row_loss.to_vec().unwrap();
    assert!(rows[0].is_nan() && rows[1].is_nan(), "{rows:?}");
    assert_eq!(rows[2], 0.0, "an ignored row has loss 0");
    assert_eq!(ce.count.item().unwrap(), 2.0);
    assert_eq!(ce.grad.shape(), [3, 0]);
}

#[test]
fn too_large_messages_show_request_and_limit() {
    let e = Error::TooLarge {
        what: "x".into(),
        requested: u64::MAX,
        limit: u64::MAX,
    };
    let msg = e.to_string();
    assert!(!msg.contains("18446744073709551615"), "{msg}");
    assert!(
        msg.contains("more than 2^64 - 1") && msg.contains("2^64 - 1;"),
        "{msg}"
    );
}

#[test]
fn row_path_of_rows_past_2_pow_31_units_does_not_overflow() {
    use tang_runtime::ops::rows_team::{RowOp, RowPath, row_path};
    let dev = device();
    // Such rows fit in the buffers of an 80 GB GPU; they take the workgroup path.
    for cols in [(1 << 31) + 1, u32::MAX as usize, (1 << 33) + 4] {
        assert_eq!(row_path(&dev, RowOp::Softmax, cols), RowPath::Workgroup);
    }
}
