//! Attention through strided views (`HeadsView`, `attention_strided`,
//! `attention_backward_strided`) against the dense path on the same heads: the same
//! kernels addressing memory differently, so every output and gradient must match bit
//! for bit; and the views' and gradients' contract errors.

use tang_runtime::dense::attention::{
    HeadsView, attention, attention_backward, attention_backward_strided, attention_strided,
};
use tang_runtime::{Device, Error, Tensor, ops};
use tang_testing::{Rng, device, devices};

/// Batch, query heads, kv heads, sequence length, head dim, and unused heads after v's
/// in the packed projection (their gradient must come back 0).
#[derive(Clone, Copy, Debug)]
struct Cfg {
    b: usize,
    h: usize,
    hkv: usize,
    t: usize,
    d: usize,
    extra: usize,
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec().unwrap().iter().map(|x| x.to_bits()).collect()
}

/// Packed attention forward and backward equal the dense kernels on split-out heads.
fn packed_case(dev: &Device, c: Cfg) {
    let Cfg {
        b,
        h,
        hkv,
        t,
        d,
        extra,
    } = c;
    let heads = h + 2 * hkv + extra;
    let mut rng = Rng::new(7 + d as u64);
    let x = Tensor::from_slice(dev, &rng.vec(b * t * heads * d, 1.5), &[b, t, heads * d]).unwrap();
    let go = Tensor::from_slice(dev, &rng.vec(b * t * h * d, 1.0), &[b, t, h, d]).unwrap();

    // Dense reference: copies in, the [B, H, T, D] kernels, copies out.
    let q = ops::split_heads(&x, 0, h, d).unwrap();
    let k = ops::split_heads(&x, h, hkv, d).unwrap();
    let v = ops::split_heads(&x, h + hkv, hkv, d).unwrap();
    let go_dense = ops::permute(&go, &[0, 2, 1, 3]).unwrap();
    let (o, lse) = attention(&q, &k, &v, None).unwrap();
    let (dq, dk, dv) = attention_backward(&q, &k, &v, &o, &lse, &go_dense, None).unwrap();
    let unused = Tensor::zeros(dev, &[b, extra.max(1), t, d]).unwrap();
    let mut parts = vec![&dq, &dk, &dv];
    if extra > 0 {
        parts.push(&unused);
    }
    let want_grad = ops::merge_heads(&parts).unwrap();

    // Strided: read where the heads lie, write token-major.
    let view = |first, n| HeadsView::packed(&x, first, n, d).unwrap();
    let (qv, kv, vv) = (view(0, h), view(h, hkv), view(h + hkv, hkv));
    let (o2, lse2) = attention_strided(&qv, &kv, &vv, None).unwrap();
    assert_eq!(o2.shape(), &[b, t, h, d]);
    let o_tokens = ops::permute(&o, &[0, 2, 1, 3]).unwrap();
    assert_eq!(bits(&o2), bits(&o_tokens), "o {c:?}");
    assert_eq!(bits(&lse2), bits(&lse), "lse {c:?}");
    let (g, gk, gv) = attention_backward_strided(&qv, &kv, &vv, &o2, &lse2, &go, None).unwrap();
    assert!(
        g.same_buffer(&gk) && g.same_buffer(&gv),
        "one gradient for the packed input"
    );
    assert_eq!(g.shape(), x.shape());
    assert_eq!(bits(&g), bits(&want_grad), "d_qkv {c:?}");

    // Separate tensors through contiguous views: separate gradients, the same values.
    let views = [&q, &k, &v].map(|t| HeadsView::contiguous(t).unwrap());
    let (o3, lse3) = attention_strided(&views[0], &views[1], &views[2], None).unwrap();
    assert_eq!(bits(&o3), bits(&o_tokens), "o of contiguous views {c:?}");
    let (g0, g1, g2) =
        attention_backward_strided(&views[0], &views[1], &views[2], &o3, &lse3, &go, None).unwrap();
    for (got, want) in [(&g0, &dq), (&g1, &dk), (&g2, &dv)] {
        assert_eq!(bits(got), bits(want), "gradients of contiguous views {c:?}");
    }
}

#[test]
fn packed_attention_equals_dense_bit_for_bit() {
    let cfg = |b, h, hkv, t, d, extra| Cfg {
        b,
        h,
        hkv,
        t,
        d,
        extra,
    };
    for dev in devices() {
        // D = 16: the row-per-thread kernels; D = 20 and 32: the register-blocked ones
        // (padded to 32; large tiles on lavapipe); D = 64: the small tile shape on
        // lavapipe. Grouped heads (Hkv < H), lengths off the tile sizes, and an unused
        // head after v's whose gradient must be 0.
        packed_case(&dev, cfg(2, 4, 2, 19, 16, 1));
        packed_case(&dev, cfg(1, 3, 1, 23, 20, 0));
        packed_case(&dev, cfg(2, 2, 2, 37, 32, 0));
        packed_case(&dev, cfg(1, 4, 2, 41, 64, 1));
    }
}

/// The row-per-thread kernels at D = 128 (the only kernels for that head dim).
#[test]
fn packed_attention_equals_dense_at_head_dim_128() {
    let c = Cfg {
        b: 1,
        h: 2,
        hkv: 1,
        t: 9,
        d: 128,
        extra: 0,
    };
    packed_case(&device(), c);
}

fn is_mismatch(e: &Error, needle: &str) -> bool {
    matches!(e, Error::ShapeMismatch { .. }) && e.to_string().contains(needle)
}

#[test]
fn views_and_gradients_reject_what_does_not_fit() {
    let dev = device();
    let x = Tensor::zeros(&dev, &[1, 3, 4 * 8]).unwrap();
    // Heads past N, N not a multiple of D, an empty view, the wrong rank: errors, no read.
    for (first, n, d) in [(3, 2, 8), (0, 1, 5), (0, 0, 8), (usize::MAX, 2, 8)] {
        let e = HeadsView::packed(&x, first, n, d).unwrap_err();
        assert!(is_mismatch(&e, "do not fit"), "{e}");
    }
    let flat = Tensor::zeros(&dev, &[32]).unwrap();
    assert!(is_mismatch(
        &HeadsView::packed(&flat, 0, 1, 8).unwrap_err(),
        "[B, T, N]"
    ));
    assert!(is_mismatch(
        &HeadsView::contiguous(&flat).unwrap_err(),
        "[B, H, T, D]"
    ));

    let q = HeadsView::packed(&x, 0, 2, 8).unwrap();
    let k = HeadsView::packed(&x, 2, 1, 8).unwrap();
    let v = HeadsView::packed(&x, 3, 1, 8).unwrap();
    let (o, lse) = attention_strided(&q, &k, &v, None).unwrap();
    // k and v as one view: their gradients would overlap.
    let e = attention_backward_strided(&q, &k, &k, &o, &lse, &o, None).unwrap_err();
    assert!(is_mismatch(&e, "would overlap"), "{e}");
    // Dense k and v that are one tensor: the same.
    let kv = Tensor::zeros(&dev, &[1, 1, 3, 8]).unwrap();
    let kvv = HeadsView::contiguous(&kv).unwrap();
    let e = attention_backward_strided(&q, &kvv, &kvv, &o, &lse, &o, None).unwrap_err();
    assert!(is_mismatch(&e, "would overlap"), "{e}");
    // o in the dense layout instead of the forward's [B, T, H, D].
    let o_dense = Tensor::zeros(&dev, &[1, 2, 3, 8]).unwrap();
    let e = attention_backward_strided(&q, &k, &v, &o_dense, &lse, &o, None).unwrap_err();
    assert!(is_mismatch(&e, "[B, T, H, D]"), "{e}");
    // k and v with another sequence length or head dim than q.
    let y = Tensor::zeros(&dev, &[1, 4, 4 * 8]).unwrap();
    let ky = HeadsView::packed(&y, 0, 1, 8).unwrap();
    let e = attention_strided(&q, &ky, &ky, None).unwrap_err();
    assert!(is_mismatch(&e, "sequence length"), "{e}");
    let kd = HeadsView::packed(&x, 0, 1, 16).unwrap();
    let e = attention_strided(&q, &kd, &kd, None).unwrap_err();
    assert!(is_mismatch(&e, "D=8"), "{e}");
}
