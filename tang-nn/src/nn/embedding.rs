//! `Embedding`: rows of a table picked by u32 ids.

use super::init;
use crate::Module;
use crate::autograd::{Error, Tensor};
use crate::rng::SplitMix64;
use tang_runtime::Device;

/// A lookup table (PyTorch's `nn.Embedding`): `weight [num_embeddings, embedding_dim]`,
/// initialised `N(0, 1)` as PyTorch does (draws from `rng`: PyTorch's distribution, not
/// its bits).
///
/// ```
/// use tang_nn::nn::Embedding;
/// use tang_nn::Tensor;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let wte = Embedding::new(&dev, 81, 64, &mut tang_nn::rng::SplitMix64::new(0))?;
/// let ids = Tensor::from_u32(&dev, &[3, 1, 4], &[1, 3])?;
/// assert_eq!(wte.forward(&ids)?.shape(), &[1, 3, 64]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct Embedding {
    /// `[num_embeddings, embedding_dim]`.
    pub weight: Tensor,
}

impl Embedding {
    /// A table of `num_embeddings` rows of `embedding_dim` values.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::Embedding;
    /// let wte = Embedding::new(&dev, 10, 4, &mut tang_nn::rng::SplitMix64::new(0))?; // nn.Embedding(10, 4)
    /// assert_eq!(wte.weight.shape(), &[10, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the sizes overflow or the device cannot allocate them.
    pub fn new(
        dev: &Device,
        num_embeddings: usize,
        embedding_dim: usize,
        rng: &mut SplitMix64,
    ) -> Result<Embedding, Error> {
        let shape = [num_embeddings, embedding_dim];
        let weight = init::normal(dev, "Embedding", &shape, rng)?;
        Ok(Embedding {
            weight: Tensor::parameter(weight),
        })
    }

    /// The rows for `ids` (u32, any shape): `[..ids.shape, embedding_dim]`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::Embedding;
    /// let wte = Embedding::new(&dev, 10, 4, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let ids = Tensor::from_u32(&dev, &[1, 2, 3, 4, 5, 6], &[2, 3])?; // [B, T]
    /// assert_eq!(wte.forward(&ids)?.shape(), &[2, 3, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Float ids are an error naming the layer:
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let wte = tang_nn::nn::Embedding::new(&dev, 10, 4, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let e = wte.forward(&Tensor::zeros(&dev, &[3])?).unwrap_err();
    /// assert!(e.to_string().contains("Embedding(10, 4)"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] naming the layer (`Embedding(10, 4)`) unless `ids` is a u32
    /// tensor; [`Error::Runtime`] when it is on another device, and the runtime's
    /// `IndexOutOfRange` for an id `>= num_embeddings`.
    pub fn forward(&self, ids: &Tensor) -> Result<Tensor, Error> {
        if ids.dtype() != tang_runtime::DType::U32 {
            let w = self.weight.shape();
            return Err(super::layer_shape_error(
                format!("Embedding({}, {})", w[0], w[1]),
                format!(
                    "the ids are {:?}; they must be u32 (build them with Tensor::from_u32, or \
                     convert class indices with functional::class_indices_from_i64)",
                    ids.dtype()
                ),
            ));
        }
        Tensor::embedding(ids, &self.weight)
    }
}
