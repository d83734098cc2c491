//! The key/value cache of one attention layer for generation: keys and values of every
//! position seen so far, kept on the GPU in buffers allocated once at their full length.
//! Each step writes only the new positions into place (`slice_scatter_`, no re-upload)
//! and attends over the cached prefix without recomputing it.

use tang_runtime::ops::attention_decode;
use tang_runtime::ops::slice_scatter_;
use tang_runtime::{Device, Tensor as RawTensor};

use crate::autograd::{Error, Tensor};

/// Keys and values `[B, Hkv, capacity, D]` of the positions an attention layer has seen,
/// and how many there are.
///
/// ```
/// use tang_nn::nn::KvCache;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let cache = KvCache::new(&dev, 1, 2, 64, 16)?; // batch 1, 2 kv heads, 64 positions, D 16
/// assert_eq!((cache.len(), cache.capacity()), (0, 64));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct KvCache {
    k: RawTensor,
    v: RawTensor,
    len: usize,
}

fn cache_error(detail: String) -> Error {
    super::invalid("KvCache", detail)
}

impl KvCache {
    /// An empty cache for `batch` sequences, `n_kv_head` heads of `head_dim`, holding up to
    /// `capacity` positions (a model's block size).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::KvCache;
    /// let cache = KvCache::new(&dev, 1, 2, 16, 8)?; // batch, kv heads, capacity, head dim
    /// assert!(cache.is_empty() && cache.capacity() == 16);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when a size is 0 or the buffers cannot be allocated.
    pub fn new(
        dev: &Device,
        batch: usize,
        n_kv_head: usize,
        capacity: usize,
        head_dim: usize,
    ) -> Result<KvCache, Error> {
        if batch == 0 || n_kv_head == 0 || capacity == 0 || head_dim == 0 {
            return Err(cache_error(format!(
                "every size must be positive, got batch {batch}, n_kv_head {n_kv_head}, \
                 capacity {capacity}, head_dim {head_dim}"
            )));
        }
        let shape = [batch, n_kv_head, capacity, head_dim];
        Ok(KvCache {
            k: RawTensor::zeros(dev, &shape)?,
            v: RawTensor::zeros(dev, &shape)?,
            len: 0,
        })
    }

    /// Positions cached so far.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # use tang_nn::nn::KvCache;
    /// let mut cache = KvCache::new(&dev, 1, 1, 8, 4)?;
    /// let q = Tensor::zeros(&dev, &[1, 1, 3, 4])?;
    /// cache.append_and_attend(&q, &q, &q)?;
    /// assert_eq!(cache.len(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is cached.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # use tang_nn::nn::KvCache;
    /// assert!(KvCache::new(&dev, 1, 1, 8, 4)?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most positions the cache holds.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # use tang_nn::nn::KvCache;
    /// assert_eq!(KvCache::new(&dev, 1, 1, 8, 4)?.capacity(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.k.shape()[2]
    }

    /// The `[B, Hkv, capacity, D]` shape of the key (and value) buffer.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # use tang_nn::nn::KvCache;
    /// assert_eq!(KvCache::new(&dev, 2, 1, 8, 4)?.shape(), &[2, 1, 8, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shape(&self) -> &[usize] {
        self.k.shape()
    }

    /// Forgets every position; the buffers are kept for reuse.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # use tang_nn::nn::KvCache;
    /// let mut cache = KvCache::new(&dev, 1, 1, 8, 4)?;
    /// let q = Tensor::zeros(&dev, &[1, 1, 2, 4])?;
    /// cache.append_and_attend(&q, &q, &q)?;
    /// cache.clear(); // start a new sequence
    /// assert!(cache.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Writes the keys and values `[B, Hkv, T, D]` of `T` new positions after the cached
    /// ones, then attends queries `q [B, H, T, D]` of those positions over every cached
    /// position up to their own (causal). Returns `[B, H, T, D]`, equal to the last `T`
    /// rows of causal attention over the whole sequence. Records nothing (generation).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # use tang_nn::nn::KvCache;
    /// let mut cache = KvCache::new(&dev, 1, 1, 8, 4)?;
    /// let prompt = Tensor::zeros(&dev, &[1, 1, 3, 4])?; // [B, H, T, D]
    /// cache.append_and_attend(&prompt, &prompt, &prompt)?;
    /// let step = Tensor::zeros(&dev, &[1, 1, 1, 4])?;
    /// assert_eq!(cache.append_and_attend(&step, &step, &step)?.shape(), &[1, 1, 1, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the shapes differ from the cache's or the new positions do
    /// not fit (`len + T > capacity`: clear the cache and start again from a shorter
    /// context).
    pub fn append_and_attend(
        &mut self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
    ) -> Result<Tensor, Error> {
        // The buffers are `[B, Hkv, capacity, D]` by construction.
        let s = self.k.shape();
        let (b, hkv, cap, d) = (s[0], s[1], s[2], s[3]);
        let t = k.shape().get(2).copied().unwrap_or(0);
        if k.shape() != [b, hkv, t, d] || v.shape() != k.shape() || t == 0 {
            return Err(cache_error(format!(
                "new keys and values must be [B={b}, Hkv={hkv}, T, D={d}] with T >= 1, \
                 got k {:?}, v {:?}",
                k.shape(),
                v.shape()
            )));
        }
        if self.len + t > cap {
            return Err(cache_error(format!(
                "{} cached positions + {t} new exceed the capacity {cap}; clear the cache and \
                 start again from the last positions of the context",
                self.len
            )));
        }
        slice_scatter_(&self.k, k.data(), 2, self.len)?;
        slice_scatter_(&self.v, v.data(), 2, self.len)?;
        let past = self.len;
        self.len += t;
        let o = attention_decode(q.data(), &self.k, &self.v, past, None)?;
        Ok(Tensor::constant(o))
    }
}
