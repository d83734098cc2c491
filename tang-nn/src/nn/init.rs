//! Parameter initialisation with PyTorch's distributions, drawn on the host from a seeded
//! [`SplitMix64`] and uploaded once. The distributions are PyTorch's; the bits are not
//! (PyTorch uses its own generator), so a tang model and a PyTorch model built with the
//! same seed start from different values: load a state dict to start from the same ones.

use crate::autograd::{Error, RawTensor, Tensor};
use crate::rng::SplitMix64;
use tang_runtime::Device;

/// `shape`'s element count, or an error naming the layer when it overflows.
fn count(layer: &str, shape: &[usize]) -> Result<usize, Error> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| {
            super::invalid(
                layer,
                format!("a parameter of shape {shape:?} has more elements than fit in memory"),
            )
        })
}

/// Uniform on `[-bound, bound)` (PyTorch's `init.uniform_(t, -bound, bound)`).
///
/// # Errors
/// [`Error::Runtime`] when the shape overflows or the device cannot allocate it.
pub(crate) fn uniform(
    dev: &Device,
    layer: &str,
    shape: &[usize],
    bound: f64,
    rng: &mut SplitMix64,
) -> Result<RawTensor, Error> {
    let n = count(layer, shape)?;
    let values: Vec<f32> = (0..n)
        .map(|_| ((rng.next_f64() * 2.0 - 1.0) * bound) as f32)
        .collect();
    Ok(RawTensor::from_slice(dev, &values, shape)?)
}

/// Standard normal `N(0, 1)` (PyTorch's `init.normal_`).
///
/// # Errors
/// As [`uniform`].
pub(crate) fn normal(
    dev: &Device,
    layer: &str,
    shape: &[usize],
    rng: &mut SplitMix64,
) -> Result<RawTensor, Error> {
    let n = count(layer, shape)?;
    let values: Vec<f32> = (0..n).map(|_| rng.normal() as f32).collect();
    Ok(RawTensor::from_slice(dev, &values, shape)?)
}

/// The bound of PyTorch's `Linear` initialisation for `fan_in` inputs: `1 / sqrt(fan_in)`,
/// both for `kaiming_uniform_(weight, a=sqrt(5))` (gain `sqrt(2 / (1 + 5))` times
/// `sqrt(3 / fan_in)`) and for the bias; 0 when `fan_in` is 0.
pub(crate) fn linear_bound(fan_in: usize) -> f64 {
    if fan_in == 0 {
        0.0
    } else {
        let a2: f64 = 5.0;
        let gain = (2.0 / (1.0 + a2)).sqrt();
        gain * (3.0 / fan_in as f64).sqrt()
    }
}

/// The parameters of a `Linear` or `Conv2d` layer as PyTorch's `reset_parameters` draws
/// them: the weight of `shape` (`[out, ...]`, its fan-in the product of the rest) and,
/// with `bias`, an `[out]` bias after it, both uniform within [`linear_bound`].
///
/// # Errors
/// As [`uniform`].
pub(crate) fn weight_and_bias(
    dev: &Device,
    layer: &str,
    shape: &[usize],
    bias: bool,
    rng: &mut SplitMix64,
) -> Result<(Tensor, Option<Tensor>), Error> {
    let (&out, rest) = shape.split_first().unwrap_or((&0, &[]));
    let fan_in = rest.iter().fold(1usize, |n, &d| n.saturating_mul(d));
    let bound = linear_bound(fan_in);
    let weight = Tensor::parameter(uniform(dev, layer, shape, bound, rng)?);
    let bias = bias
        .then(|| uniform(dev, layer, &[out], bound, rng))
        .transpose()?;
    Ok((weight, bias.map(Tensor::parameter)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn linear_bound_is_one_over_sqrt_fan_in() {
        for fan_in in [1usize, 3, 64, 1000] {
            let want = 1.0 / (fan_in as f64).sqrt();
            assert!((super::linear_bound(fan_in) - want).abs() < 1e-12);
        }
        assert_eq!(super::linear_bound(0), 0.0);
    }
}
