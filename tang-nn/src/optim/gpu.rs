//! The kernels of the optimizers and of clipping: one `#[kernel]` function per update,
//! launched once per parameter tensor or once over a group's flat tensors (`flat.rs`),
//! each in PyTorch's arithmetic (see `sgd.rs`, `adam.rs` and `clip.rs` for the formulas).
//!
//! PyTorch's CPU kernels compute `a + s * b` as one fused multiply-add (their vectorised
//! `add(alpha=)`, `lerp_` and `addcmul_`). WGSL's `fma` may be a product followed by a sum
//! (Vulkan allows it, and lavapipe does it), which moves SGD with momentum off PyTorch's
//! trajectory by 2e-4 relative within 100 steps. So [`kernels::fused_mul_add`] checks on
//! the GPU whether `fma` is fused, and where it is not, computes the singly rounded
//! result from error-free transformations (Dekker's product and Knuth's sum).
//!
//! The opposite happens too: a shader compiler may contract a product and a sum that
//! PyTorch rounds separately into one `fma` (NVIDIA's does: AdamW's `p * (1 - lr * wd)`
//! followed by `p + step` became one fused operation there, 1.8e-6 relative off PyTorch
//! after 100 steps). So no product or quotient of these kernels feeds a sum directly:
//! where PyTorch rounds a product before adding it, the product is multiplied by `one`, a
//! uniform holding 1 that the compiler cannot fold, and a contraction of that last
//! multiplication with the sum, `fma(x, one, y)`, is exactly the rounded sum `x + y`.
//! `optim_contraction.rs` checks the generated WGSL of every kernel for this.
//!
//! WGSL's division and square root may be off by an ulp or two (NVIDIA's are); PyTorch's
//! are correctly rounded. [`kernels::divide`] and [`kernels::square_root`] correct them
//! with Newton steps on the exact residual, which leave a correctly rounded result
//! (lavapipe's) as it is. A GPU may flush subnormal results to zero (WGSL permits it;
//! NVIDIA does): a quotient below 2^-126 may come back as 0 there.

use tang_runtime::prelude::*;

/// The kernels and the helpers they inline.
#[kernels]
pub mod kernels {
    /// The high half of `a` (Veltkamp's split with 2^12 + 1: 12 significant bits).
    /// `one` (a uniform holding 1) keeps the compiler from simplifying `c - (c - a)`
    /// to `a`, which is true of real numbers and false of floats.
    ///
    /// ```
    /// use tang_nn::optim::kernels::split_hi;
    /// let x = 1.0 + f32::EPSILON;
    /// let hi = split_hi(x, 1.0); // the kernels are ordinary functions on the host too
    /// assert!(hi == 1.0 && x - hi == f32::EPSILON); // hi + lo is x exactly
    /// ```
    pub fn split_hi(a: f32, one: f32) -> f32 {
        let c = (4097.0 * a) * one;
        c - (c - a) * one
    }

    /// `a * b + c` rounded once, as a fused multiply-add, on every GPU. `one` is a
    /// uniform holding 1 (a value the shader compiler cannot fold): it builds the probe
    /// `(1 + 2^-12)^2 - (1 + 2^-11)`, which is 2^-24 when `fma` is fused and 0 when it is
    /// a product then a sum, and it keeps the compiler from rewriting the error-free
    /// transformations by the laws of real numbers. Where `fma` is not fused, the
    /// product's exact error (Dekker) and the sum's (Knuth's two-sum) are added back;
    /// inputs so large that the split overflows fall back to `fma`.
    ///
    /// ```
    /// use tang_nn::optim::kernels::fused_mul_add;
    /// let a = 1.0 + f32::EPSILON;
    /// // Rounded once, as f32::mul_add (a product then a sum would lose the ε² term).
    /// assert_eq!(fused_mul_add(a, a, -1.0, 1.0), a.mul_add(a, -1.0));
    /// ```
    pub fn fused_mul_add(a: f32, b: f32, c: f32, one: f32) -> f32 {
        let native = a.mul_add(b, c);
        let probe_a = one + 1.0 / 4096.0;
        let probe_c = -(one + 1.0 / 2048.0);
        let fused = probe_a.mul_add(probe_a, probe_c) != 0.0;
        // Every product below is multiplied by `one` before it is added (see the module
        // documentation), and so are the operands, which may be the caller's products or
        // quotients.
        let (a, b, c) = (a * one, b * one, c * one);
        let p = (a * b) * one;
        let ah = split_hi(a, one);
        let al = a - ah;
        let bh = split_hi(b, one);
        let bl = b - bh;
        let product_error =
            ((((ah * bh) * one - p) + (ah * bl) * one) + (al * bh) * one) + (al * bl) * one;
        let s = p + c;
        let bb = s * one - p;
        let sum_error = (p - (s - bb)) + (c - bb);
        let emulated = s + (sum_error + product_error);
        let checked = if finite(emulated) < 0.5 {
            native
        } else {
            emulated
        };
        // `fused` depends on the uniform `one` alone, so this choice is an `if` block in
        // the WGSL (tang-expr's `codegen/branches.rs`): a device whose `fma` is fused
        // skips the error-free transformations instead of computing and discarding them.
        if fused { native } else { checked }
    }

    /// Whether `x` is finite (NaN fails the comparison).
    ///
    /// ```
    /// use tang_nn::optim::kernels::finite;
    /// assert_eq!((finite(1.0), finite(f32::INFINITY), finite(f32::NAN)), (1.0, 0.0, 0.0));
    /// ```
    pub fn finite(x: f32) -> f32 {
        if x.abs() <= 3.402_823_5e38 { 1.0 } else { 0.0 }
    }

    /// `a / b` correctly rounded. The reciprocal is first made correctly rounded by one
    /// Newton step on its exact residual `1 - b * y`; then the quotient (WGSL's may be
    /// 2.5 ulp off) is corrected twice by the exact residual `a - q * b` (Markstein's
    /// step: from a quotient within an ulp and a correctly rounded reciprocal, one step
    /// gives the correctly rounded quotient; the first step brings it within an ulp). A
    /// divisor past 2^126, whose reciprocal is subnormal, is scaled by 1/4 first (with the
    /// dividend, exactly). Where a residual is not finite (a zero or infinite divisor, an
    /// infinite dividend) the quotient is already what IEEE gives.
    ///
    /// ```
    /// use tang_nn::optim::kernels::divide;
    /// assert_eq!(divide(1.0, 3.0, 1.0), 1.0f32 / 3.0); // correctly rounded
    /// ```
    pub fn divide(a: f32, b: f32, one: f32) -> f32 {
        let scale = if b.abs() > 8.507_059e37 { 0.25 } else { 1.0 };
        let a = a * scale;
        let b = b * scale;
        let q0 = a / b;
        let y0 = 1.0 / b;
        let e = fused_mul_add(-b, y0, one, one);
        let y = fused_mul_add(y0, e, y0, one);
        let r0 = fused_mul_add(-q0, b, a, one);
        let q1 = fused_mul_add(r0, y, q0, one);
        let r1 = fused_mul_add(-q1, b, a, one);
        let q2 = fused_mul_add(r1, y, q1, one);
        if finite(r0) * finite(r1) * finite(q2) > 0.5 {
            q2
        } else {
            q0 * one
        }
    }

    /// `sqrt(x)` correctly rounded: the root corrected by the exact residual `x - s * s`.
    /// Zero, infinity and NaN keep `sqrt`'s own result.
    ///
    /// ```
    /// use tang_nn::optim::kernels::square_root;
    /// assert_eq!(square_root(2.0, 1.0), 2f32.sqrt()); // correctly rounded
    /// ```
    pub fn square_root(x: f32, one: f32) -> f32 {
        let s = x.sqrt();
        let r = fused_mul_add(-s, s, x, one);
        let corrected = fused_mul_add(r, 0.5 / s, s, one);
        if s > 0.0 && finite(r) * finite(corrected) > 0.5 {
            corrected
        } else {
            s
        }
    }

    /// The gradient an update uses: times the clip coefficient, negated to maximize, plus
    /// the L2 penalty `l2 * p` (PyTorch's `grad.add(param, alpha=weight_decay)`).
    ///
    /// ```
    /// use tang_nn::optim::kernels::effective_grad;
    /// // p = 2, grad = 0.5, clip_coef = 1, maximize off, weight decay 0.1: 0.5 + 0.1 * 2
    /// assert_eq!(effective_grad(2.0, 0.5, 1.0, 0.0, 0.1, 1.0), 0.7);
    /// ```
    pub fn effective_grad(
        p: f32,
        grad: f32,
        clip_coef: f32,
        maximize: f32,
        l2: f32,
        one: f32,
    ) -> f32 {
        // Rounded before it is added, as PyTorch's in-place clip rounds it.
        let g0 = (grad * clip_coef) * one;
        let g1 = if maximize > 0.5 { -g0 } else { g0 };
        if l2 != 0.0 {
            fused_mul_add(p, l2, g1, one)
        } else {
            g1
        }
    }

    /// One SGD step without momentum, in place. `clip_coef` (one element) multiplies
    /// the gradient; flags are 1.0 or 0.0; `one` is 1.0 (see [`fused_mul_add`]).
    ///
    /// ```
    /// use tang_nn::optim::kernels::sgd_update;
    /// let mut p = 1.0;
    /// sgd_update(&mut p, 0.5, 1.0, 0.0, 0.0, -0.1, 1.0); // p -= lr * grad with lr 0.1
    /// assert_eq!(p, 0.95);
    /// ```
    #[kernel]
    #[allow(clippy::too_many_arguments)]
    pub fn sgd_update(
        p: &mut f32,
        grad: f32,
        clip_coef: f32,
        #[uniform] maximize: f32,
        #[uniform] weight_decay: f32,
        #[uniform] neg_lr: f32,
        #[uniform] one: f32,
    ) {
        let g = effective_grad(*p, grad, clip_coef, maximize, weight_decay, one);
        *p = fused_mul_add(g, neg_lr, *p, one);
    }

    /// One SGD step with a momentum buffer, in place. `first` (1.0 on the parameter's
    /// first step) starts the buffer at the gradient, as PyTorch does.
    ///
    /// ```
    /// use tang_nn::optim::kernels::sgd_momentum_update;
    /// let (mut p, mut buf) = (1.0, 0.0);
    /// // The first step starts the buffer at the gradient: p -= 0.1 * 0.5.
    /// sgd_momentum_update(&mut p, &mut buf, 0.5, 1.0, 0.0, 0.0, -0.1, 0.9, 1.0, 0.0, 1.0, 1.0);
    /// assert_eq!((p, buf), (0.95, 0.5));
    /// ```
    #[kernel]
    #[allow(clippy::too_many_arguments)]
    pub fn sgd_momentum_update(
        p: &mut f32,
        momentum_buffer: &mut f32,
        grad: f32,
        clip_coef: f32,
        #[uniform] maximize: f32,
        #[uniform] weight_decay: f32,
        #[uniform] neg_lr: f32,
        #[uniform] momentum: f32,
        #[uniform] one_minus_dampening: f32,
        #[uniform] nesterov: f32,
        #[uniform] first: f32,
        #[uniform] one: f32,
    ) {
        let g = effective_grad(*p, grad, clip_coef, maximize, weight_decay, one);
        let buf = if first > 0.5 {
            g
        } else {
            fused_mul_add(g, one_minus_dampening, *momentum_buffer * momentum, one)
        };
        *momentum_buffer = buf;
        let d = if nesterov > 0.5 {
            fused_mul_add(buf, momentum, g, one)
        } else {
            buf
        };
        *p = fused_mul_add(d, neg_lr, *p, one);
    }

    /// PyTorch's `lerp(m, g, w)` as its vectorised kernel computes it (from `m` for a
    /// weight under 0.5, from `g` otherwise).
    ///
    /// ```
    /// use tang_nn::optim::kernels::lerp;
    /// assert_eq!(lerp(0.0, 1.0, 0.1, 1.0), 0.1); // torch.lerp(m, g, 0.1)
    /// ```
    pub fn lerp(m: f32, g: f32, w: f32, one: f32) -> f32 {
        if w.abs() < 0.5 {
            fused_mul_add(w, g - m, m, one)
        } else {
            fused_mul_add(w - 1.0, g - m, g, one)
        }
    }

    /// One Adam or AdamW step, in place. `decay` is `1 - lr * weight_decay` for AdamW
    /// (1 otherwise), `l2` Adam's weight decay (0 for AdamW).
    ///
    /// ```
    /// use tang_nn::optim::kernels::adam_update;
    /// let (mut p, mut m, mut v) = (1.0f32, 0.0, 0.0);
    /// // Adam's first step with lr 0.1: m = 0.1 g, v = 0.001 g², p -= 0.1 m̂ / (sqrt(v̂) + eps).
    /// let (b1, b2) = (0.9f32, 0.999f32);
    /// let step_size = -0.1 / (1.0 - b1);
    /// let bc2_sqrt = (1.0 - b2).sqrt();
    /// adam_update(&mut p, &mut m, &mut v, 0.5, 1.0, 0.0, 0.0, 1.0, 1.0 - b1, b2, 1.0 - b2, step_size, bc2_sqrt, 1e-8, 1.0);
    /// assert!((p - 0.9).abs() < 1e-6); // the first step moves by lr
    /// ```
    #[kernel]
    #[allow(clippy::too_many_arguments)]
    pub fn adam_update(
        p: &mut f32,
        exp_avg: &mut f32,
        exp_avg_sq: &mut f32,
        grad: f32,
        clip_coef: f32,
        #[uniform] maximize: f32,
        #[uniform] l2: f32,
        #[uniform] decay: f32,
        #[uniform] lerp_weight: f32,
        #[uniform] beta2: f32,
        #[uniform] one_minus_beta2: f32,
        #[uniform] neg_step_size: f32,
        #[uniform] bias_correction2_sqrt: f32,
        #[uniform] eps: f32,
        #[uniform] one: f32,
    ) {
        let g = effective_grad(*p, grad, clip_coef, maximize, l2, one);
        // PyTorch's `param.mul_(1 - lr * weight_decay)` rounds the product before the
        // step is added to it: `* one` keeps a compiler from fusing the two.
        *p = (*p * decay) * one;
        *exp_avg = lerp(*exp_avg, g, lerp_weight, one);
        *exp_avg_sq = fused_mul_add(one_minus_beta2 * g, g, *exp_avg_sq * beta2, one);
        let denom = divide(square_root(*exp_avg_sq, one), bias_correction2_sqrt, one) + eps;
        *p += divide(neg_step_size * *exp_avg, denom, one);
    }

    /// [`adam_update()`] with AMSGrad's running maximum of the second moment.
    ///
    /// ```
    /// use tang_nn::optim::kernels::adam_amsgrad_update;
    /// let (mut p, mut m, mut v, mut v_max) = (1.0f32, 0.0, 0.0, 0.0);
    /// let (b1, b2) = (0.9f32, 0.999f32);
    /// let (step_size, bc2_sqrt) = (-0.1 / (1.0 - b1), (1.0 - b2).sqrt());
    /// adam_amsgrad_update(&mut p, &mut m, &mut v, &mut v_max, 0.5, 1.0, 0.0, 0.0, 1.0, 1.0 - b1, b2, 1.0 - b2, step_size, bc2_sqrt, 1e-8, 1.0);
    /// assert!((p - 0.9).abs() < 1e-6 && v_max == v);
    /// ```
    #[kernel]
    #[allow(clippy::too_many_arguments)]
    pub fn adam_amsgrad_update(
        p: &mut f32,
        exp_avg: &mut f32,
        exp_avg_sq: &mut f32,
        max_exp_avg_sq: &mut f32,
        grad: f32,
        clip_coef: f32,
        #[uniform] maximize: f32,
        #[uniform] l2: f32,
        #[uniform] decay: f32,
        #[uniform] lerp_weight: f32,
        #[uniform] beta2: f32,
        #[uniform] one_minus_beta2: f32,
        #[uniform] neg_step_size: f32,
        #[uniform] bias_correction2_sqrt: f32,
        #[uniform] eps: f32,
        #[uniform] one: f32,
    ) {
        let g = effective_grad(*p, grad, clip_coef, maximize, l2, one);
        // PyTorch's `param.mul_(1 - lr * weight_decay)` rounds the product before the
        // step is added to it: `* one` keeps a compiler from fusing the two.
        *p = (*p * decay) * one;
        *exp_avg = lerp(*exp_avg, g, lerp_weight, one);
        *exp_avg_sq = fused_mul_add(one_minus_beta2 * g, g, *exp_avg_sq * beta2, one);
        // torch.maximum: a NaN on either side wins (the sum of the two is NaN).
        let v = *exp_avg_sq;
        let old = *max_exp_avg_sq;
        *max_exp_avg_sq = if v > old {
            v
        } else if v <= old {
            old
        } else {
            v + old
        };
        let denom = divide(
            square_root(*max_exp_avg_sq, one),
            bias_correction2_sqrt,
            one,
        ) + eps;
        *p += divide(neg_step_size * *exp_avg, denom, one);
    }

    /// `x * x`: the squares a norm sums.
    ///
    /// ```
    /// assert_eq!(tang_nn::optim::kernels::square(3.0), 9.0);
    /// ```
    #[kernel]
    pub fn square(x: f32) -> f32 {
        x * x
    }

    /// A norm from its sum of squares, correctly rounded (`one` is 1).
    ///
    /// ```
    /// assert_eq!(tang_nn::optim::kernels::norm_from_sum_of_squares(25.0, 1.0), 5.0);
    /// ```
    #[kernel]
    pub fn norm_from_sum_of_squares(x: f32, #[uniform] one: f32) -> f32 {
        square_root(x, one)
    }

    /// PyTorch's `clamp(max_norm / (total_norm + 1e-6), max=1)`, the division correctly
    /// rounded; a NaN norm gives NaN, as `clamp` keeps NaN.
    ///
    /// ```
    /// use tang_nn::optim::kernels::clip_coefficient;
    /// assert_eq!(clip_coefficient(0.5, 1.0, 1.0), 1.0); // under max_norm: unchanged
    /// assert!((clip_coefficient(4.0, 1.0, 1.0) - 0.25).abs() < 1e-6);
    /// ```
    #[kernel]
    pub fn clip_coefficient(total_norm: f32, #[uniform] max_norm: f32, #[uniform] one: f32) -> f32 {
        let c = divide(max_norm, total_norm + 1e-6, one);
        if c > 1.0 { 1.0 } else { c }
    }

    /// `g *= coef` with a one-element `coef` broadcast to every element.
    ///
    /// ```
    /// let mut g = 2.0;
    /// tang_nn::optim::kernels::scale_in_place(&mut g, 0.5);
    /// assert_eq!(g, 1.0);
    /// ```
    #[kernel]
    pub fn scale_in_place(g: &mut f32, coef: f32) {
        *g *= coef;
    }

    /// A copy of a state tensor on the device (so that two optimizers loaded from one
    /// checkpoint never share, and update, one buffer).
    ///
    /// ```
    /// assert_eq!(tang_nn::optim::kernels::copy_state(1.5), 1.5);
    /// ```
    #[kernel]
    pub fn copy_state(x: f32) -> f32 {
        x
    }
}
