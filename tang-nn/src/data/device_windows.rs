//! nanoGPT's `get_batch` with the corpus on the GPU: the token corpus is uploaded once as
//! a u32 tensor; each step uploads only its `batch_size` window starts (drawn on the host
//! by the seeded [`WindowSampler`], the same as [`super::TokenBatcher`]'s) and one kernel
//! gathers the inputs and the shifted targets from the corpus on the device.

use tang_runtime::{Binding, Device, RawKernel, Tensor};

use super::{DataError, WindowSampler};

/// Threads per workgroup of [`GATHER_WINDOWS`].
const WORKGROUP: u64 = 256;

/// `x[b, t] = corpus[start[b] + t]`, `y[b, t] = corpus[start[b] + t + 1]`, one thread per
/// token. Every start is below `len - block` (the sampler's range), so both reads are in
/// bounds; the runtime's bounds checks stay on all the same (a checked kernel).
const GATHER_WINDOWS_WGSL: &str = "
struct Params { total: u32, block: u32, row: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> corpus: array<u32>;
@group(0) @binding(2) var<storage, read> starts: array<u32>;
@group(0) @binding(3) var<storage, read_write> x: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.row;
    if (i >= p.total) { return; }
    let s = starts[i / p.block] + i % p.block;
    x[i] = corpus[s];
    y[i] = corpus[s + 1u];
}
";

/// The window-gathering kernel (checked: wgpu's runtime bounds checks stay on).
const GATHER_WINDOWS: RawKernel = RawKernel::checked("gather_windows", GATHER_WINDOWS_WGSL, "main");

/// Language-model batches of random windows of a token corpus kept on the GPU (nanoGPT's
/// `get_batch`): the same windows as [`super::TokenBatcher`] for the same seed and step.
///
/// ```
/// use tang_nn::data::DeviceTokenBatcher;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let corpus: Vec<u32> = (0..100).collect(); // e.g. read from train.bin
/// let batcher = DeviceTokenBatcher::new(&dev, &corpus, 4, 8, 1337)?;
/// let (x, y) = batcher.batch(0)?; // nanoGPT's get_batch("train"), on the GPU
/// assert_eq!((x.shape(), y.shape()), (&[4, 8][..], &[4, 8][..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct DeviceTokenBatcher {
    corpus: Tensor,
    sampler: WindowSampler,
}

impl DeviceTokenBatcher {
    /// Uploads `corpus` (token ids) to `device` once; each step then draws `batch_size`
    /// windows of `block_size` tokens from the stream of `seed` (under `mpirun`, this
    /// rank's stream of it: [`DeviceTokenBatcher::for_rank`]). Use another seed for a
    /// validation split.
    ///
    /// ```
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let batcher = tang_nn::data::DeviceTokenBatcher::new(&dev, &[5, 6, 7, 8], 1, 2, 0)?;
    /// assert_eq!(batcher.corpus().shape(), &[4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`WindowSampler::new`]; [`DataError::InvalidOption`] when the corpus or a batch
    /// has more than `u32::MAX` tokens (a kernel indexes them with 32 bits);
    /// [`DataError::Device`] when the upload fails; [`DataError::Distributed`] when MPI
    /// fails to start under a launcher.
    pub fn new(
        device: &Device,
        corpus: &[u32],
        batch_size: usize,
        block_size: usize,
        seed: u64,
    ) -> Result<Self, DataError> {
        let sampler =
            WindowSampler::new(seed, batch_size, block_size, corpus.len())?.for_this_rank()?;
        for (what, count) in [
            ("corpus", corpus.len()),
            ("batch_size", batch_size * block_size),
        ] {
            if u32::try_from(count).is_err() {
                return Err(DataError::InvalidOption {
                    what,
                    detail: format!(
                        "{count} tokens are more than the GPU kernel can index (u32::MAX); \
                         split the corpus or use a smaller batch"
                    ),
                });
            }
        }
        let corpus = Tensor::from_u32(device, corpus, &[corpus.len()])?;
        Ok(DeviceTokenBatcher { corpus, sampler })
    }

    /// The batches rank `rank` of `world_size` trains on ([`WindowSampler::for_rank`]):
    /// what a data-parallel rank draws, to reproduce it in one process.
    ///
    /// ```
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let corpus: Vec<u32> = (0..100).collect();
    /// let batcher = tang_nn::data::DeviceTokenBatcher::new(&dev, &corpus, 2, 4, 0)?;
    /// let rank1 = batcher.clone().for_rank(1, 2)?; // rank 1 of `mpirun -np 2`
    /// assert_ne!(rank1.batch(0)?.0.to_vec_u32()?, batcher.batch(0)?.0.to_vec_u32()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`DataError::InvalidOption`] unless `rank < world_size`.
    pub fn for_rank(mut self, rank: usize, world_size: usize) -> Result<Self, DataError> {
        self.sampler = self.sampler.for_rank(rank, world_size)?;
        Ok(self)
    }

    /// The window sampler.
    ///
    /// ```
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let batcher = tang_nn::data::DeviceTokenBatcher::new(&dev, &[5, 6, 7, 8], 1, 2, 0)?;
    /// assert_eq!(batcher.sampler().offset_count(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sampler(&self) -> &WindowSampler {
        &self.sampler
    }

    /// The corpus on the device.
    ///
    /// ```
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let batcher = tang_nn::data::DeviceTokenBatcher::new(&dev, &[5, 6, 7, 8], 1, 2, 0)?;
    /// assert_eq!(batcher.corpus().to_vec_u32()?, [5, 6, 7, 8]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn corpus(&self) -> &Tensor {
        &self.corpus
    }

    /// Step `step`'s inputs and targets, two `[batch_size, block_size]` u32 tensors: row
    /// `b` is `corpus[o..o + block]` and `corpus[o + 1..o + 1 + block]` for the `b`-th
    /// start `o` of [`WindowSampler::offsets`]. Uploads the starts and records one kernel;
    /// reads nothing back.
    ///
    /// ```
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let batcher = tang_nn::data::DeviceTokenBatcher::new(&dev, &[5, 6, 7], 1, 2, 0)?;
    /// let (x, y) = batcher.batch(0)?; // one window fits: [5, 6] -> [6, 7]
    /// assert_eq!((x.to_vec_u32()?, y.to_vec_u32()?), (vec![5, 6], vec![6, 7]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`WindowSampler::offsets`]; [`DataError::Device`] when the device fails.
    pub fn batch(
        &self,
        step: u64,
    ) -> Result<(crate::autograd::Tensor, crate::autograd::Tensor), DataError> {
        let dev = self.corpus.device();
        // new() checked that the corpus length fits u32, and every start is below it.
        let starts: Vec<u32> = self
            .sampler
            .offsets(step)?
            .into_iter()
            .map(|o| o as u32)
            .collect();
        let (batch, block) = (self.sampler.batch_size(), self.sampler.block_size());
        let starts = Tensor::from_u32(dev, &starts, &[batch])?;
        let shape = [batch, block];
        let x = dev.empty(&shape, tang_runtime::DType::U32)?;
        let y = dev.empty(&shape, tang_runtime::DType::U32)?;
        // new() checked that batch * block fits u32.
        let total = (batch * block) as u64;
        let max_x = u64::from(dev.info().limits.max_compute_workgroups_per_dimension).max(1);
        let groups = total.div_ceil(WORKGROUP);
        let gx = groups.min(max_x);
        let gy = groups.div_ceil(gx);
        let params: Vec<u8> = [total, block as u64, gx * WORKGROUP, 0]
            .iter()
            .flat_map(|&w| (w as u32).to_le_bytes())
            .collect();
        dev.dispatch_raw(
            &GATHER_WINDOWS,
            &[],
            &[
                Binding::Uniform(&params),
                Binding::Read(&self.corpus),
                Binding::Read(&starts),
                Binding::ReadWrite(&x),
                Binding::ReadWrite(&y),
            ],
            // dispatch_raw rejects a grid past the device's limit with a typed error.
            [gx as u32, u32::try_from(gy).unwrap_or(u32::MAX), 1],
        )?;
        // Tokens of the corpus: its largest id bounds theirs, so an embedding or a loss
        // checks them on the host, with no launch or read per step.
        x.mark_values_from(&self.corpus);
        y.mark_values_from(&self.corpus);
        Ok((
            crate::autograd::Tensor::constant(x),
            crate::autograd::Tensor::constant(y),
        ))
    }
}
