//! Tensors: a pooled device buffer with a shape and an element type. A tensor is usually
//! a whole buffer; a view ([`Tensor::view_at`]) is part of one, at an offset aligned for
//! binding, so results computed side by side in one buffer (a layer norm's two weight
//! gradients, an optimizer's flat state) are handed out without copies.
//!
//! Reads flush: [`Tensor::to_vec`] submits every launch recorded before it and waits, so
//! a read never sees stale data.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

mod read;

use crate::device::Device;
use crate::dtype::DType;
use crate::error::Error;
use crate::size::Size;

/// A device buffer from the pool; gives it back when the last tensor using it drops.
pub(crate) struct Storage {
    pub dev: Device,
    pub buffer: wgpu::Buffer,
    class: u64,
    /// The batch that last recorded a command using this buffer (`u64::MAX`: none).
    pub last_batch: AtomicU64,
    /// For u32 data: the largest value the buffer can hold, known on the host without a
    /// read ([`UNKNOWN_MAX`] when not known), so index ops check ids for free. Set by an
    /// upload, carried by ops that copy values ([`Tensor::mark_values_from`]), reset by
    /// any launch that writes the buffer.
    pub id_max: AtomicU64,
    /// How many elements from the start of the buffer `id_max` is exactly the maximum of
    /// (an upload's length; 0 when it is only an upper bound).
    pub id_exact_len: AtomicU64,
}

/// [`Storage::id_max`] when nothing is known.
pub(crate) const UNKNOWN_MAX: u64 = u64::MAX;

impl Drop for Storage {
    fn drop(&mut self) {
        // Never called with the state lock held: the runtime drops tensors only after
        // releasing it.
        let st = self.dev.inner.state.lock();
        let mut st = match st {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        st.release(
            &self.dev.inner,
            self.buffer.clone(),
            self.class,
            self.last_batch.load(Ordering::Relaxed),
        );
    }
}

/// An n-dimensional array on a [`Device`]: cheap to clone (clones share the buffer).
#[derive(Clone)]
pub struct Tensor {
    pub(crate) storage: Arc<Storage>,
    /// Where the tensor starts in the buffer, in bytes: 0, or a multiple of the device's
    /// storage offset alignment for a view of part of a buffer (see [`Tensor::view_at`]).
    offset: u64,
    shape: Arc<[usize]>,
    /// The element count, computed (checked) once when the shape was set: a shape such
    /// as `[usize::MAX, 2, 0]` holds no elements but its naive product overflows.
    len: usize,
    dtype: DType,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("shape", &self.shape)
            .field("dtype", &self.dtype)
            .finish()
    }
}

impl Device {
    /// Whether a view may start `offset` bytes into a buffer: a multiple of the device's
    /// storage binding alignment (`min_storage_buffer_offset_alignment`).
    pub(crate) fn is_view_aligned(&self, offset: u64) -> bool {
        let align = self.info().limits.min_storage_buffer_offset_alignment;
        offset.is_multiple_of(u64::from(align.max(1)))
    }

    /// A tensor from the buffer pool; its contents are unspecified (write before reading).
    ///
    /// # Errors
    /// [`Error::TooLarge`] over the device's buffer size limit, [`Error::DeviceLost`].
    pub fn empty(&self, shape: &[usize], dtype: DType) -> Result<Tensor, Error> {
        self.alloc_tensor(shape, dtype, true)
    }

    /// A tensor whose buffer is idle when `gpu_written` is false (safe to upload into).
    pub(crate) fn alloc_tensor(
        &self,
        shape: &[usize],
        dtype: DType,
        gpu_written: bool,
    ) -> Result<Tensor, Error> {
        let limit = self.inner.info.limits.max_buffer_size;
        let bytes = (Size::product(shape) * dtype.size()).at_most(limit, || {
            format!("tensor of shape {shape:?} ({dtype:?}): bytes")
        })?;
        let bytes = bytes as u64;
        let (buffer, class, last) = self.lock()?.alloc(&self.inner, bytes, gpu_written)?;
        Ok(Tensor {
            storage: Arc::new(Storage {
                dev: self.clone(),
                buffer,
                class,
                last_batch: AtomicU64::new(last),
                id_max: AtomicU64::new(UNKNOWN_MAX),
                id_exact_len: AtomicU64::new(0),
            }),
            offset: 0,
            shape: shape.into(),
            len: (bytes / dtype.size() as u64) as usize,
            dtype,
        })
    }
}

impl Tensor {
    fn upload(
        dev: &Device,
        bytes: &[u8],
        shape: &[usize],
        dtype: DType,
        len: usize,
    ) -> Result<Tensor, Error> {
        let n = Size::product(shape);
        if n.get() != Some(len) {
            return Err(Error::ShapeMismatch {
                op: "upload".into(),
                detail: format!("{len} values do not fill shape {shape:?} ({n} elements)"),
            });
        }
        let t = dev.alloc_tensor(shape, dtype, false)?;
        if !bytes.is_empty() {
            // The buffer is fresh from the pool, so no unsubmitted command uses it. wgpu
            // writes whole 4-byte words: an odd number of f16 values gets a zero pad (the
            // pool's size classes are multiples of 16 bytes, so it lies in the buffer).
            let queue = &dev.inner.queue;
            if bytes.len().is_multiple_of(4) {
                queue.write_buffer(&t.storage.buffer, t.offset, bytes);
            } else {
                let mut padded = bytes.to_vec();
                padded.resize(bytes.len().next_multiple_of(4), 0);
                queue.write_buffer(&t.storage.buffer, t.offset, &padded);
            }
        }
        Ok(t)
    }

    /// Uploads `data` as an f32 tensor of `shape`.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `data.len()` is not the product of `shape`.
    pub fn from_slice(dev: &Device, data: &[f32], shape: &[usize]) -> Result<Tensor, Error> {
        Self::upload(
            dev,
            bytemuck::cast_slice(data),
            shape,
            DType::F32,
            data.len(),
        )
    }

    /// Uploads `data` as an f16 tensor of `shape` (PyTorch's `torch.tensor(data,
    /// dtype=torch.float16)`; [`half::f16::from_f32`] rounds an f32 to nearest even).
    ///
    /// ```
    /// # use tang_runtime::{Device, DType, Tensor};
    /// use half::f16;
    /// let dev = Device::new()?;
    /// let t = Tensor::from_f16(&dev, &[f16::from_f32(1.5), f16::from_f32(-2.0)], &[2])?;
    /// assert_eq!(t.dtype(), DType::F16);
    /// assert_eq!(t.to_vec()?, vec![1.5, -2.0]);
    /// # Ok::<(), tang_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `data.len()` is not the product of `shape`.
    pub fn from_f16(dev: &Device, data: &[half::f16], shape: &[usize]) -> Result<Tensor, Error> {
        Self::upload(
            dev,
            bytemuck::cast_slice(data),
            shape,
            DType::F16,
            data.len(),
        )
    }

    /// Uploads `data` as a u32 tensor of `shape`.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `data.len()` is not the product of `shape`.
    pub fn from_u32(dev: &Device, data: &[u32], shape: &[usize]) -> Result<Tensor, Error> {
        let t = Self::upload(
            dev,
            bytemuck::cast_slice(data),
            shape,
            DType::U32,
            data.len(),
        )?;
        // Remembered so that an index op finds an id past its table without a read.
        let max = data.iter().copied().max().unwrap_or(0);
        t.storage.id_max.store(u64::from(max), Ordering::Relaxed);
        t.storage
            .id_exact_len
            .store(data.len() as u64, Ordering::Relaxed);
        Ok(t)
    }

    /// For a u32 tensor: the largest value it can hold as known on the host, and whether
    /// that is its exact maximum (an upload seen whole) rather than an upper bound.
    pub(crate) fn known_max(&self) -> Option<(u32, bool)> {
        if self.dtype != DType::U32 {
            return None;
        }
        let max = self.storage.id_max.load(Ordering::Relaxed);
        let max = u32::try_from(max).ok()?;
        let exact = self.offset == 0
            && self.len as u64 == self.storage.id_exact_len.load(Ordering::Relaxed);
        Some((max, exact))
    }

    /// Declares that this u32 tensor was just filled with values copied from `source`
    /// (a gather of token windows from a corpus, an `index_select` of ids), so that what
    /// is known of `source`'s largest value bounds this one's too: an index op given it
    /// then needs no check on the GPU. Call it after the launch that wrote this tensor.
    ///
    /// ```
    /// # let dev = tang_runtime::Device::new()?;
    /// let corpus = tang_runtime::Tensor::from_u32(&dev, &[1, 2, 3], &[3])?;
    /// let window = dev.empty(&[2], tang_runtime::DType::U32)?;
    /// // ... a kernel copies two tokens of `corpus` into `window` ...
    /// window.mark_values_from(&corpus);
    /// # Ok::<(), tang_runtime::Error>(())
    /// ```
    pub fn mark_values_from(&self, source: &Tensor) {
        let max = source
            .known_max()
            .map_or(UNKNOWN_MAX, |(m, _)| u64::from(m));
        self.storage.id_max.store(max, Ordering::Relaxed);
        self.storage.id_exact_len.store(0, Ordering::Relaxed);
    }

    /// An f32 tensor of zeros.
    ///
    /// # Errors
    /// [`Error::TooLarge`], [`Error::DeviceLost`].
    pub fn zeros(dev: &Device, shape: &[usize]) -> Result<Tensor, Error> {
        let t = dev.empty(shape, DType::F32)?;
        t.clear()?;
        Ok(t)
    }

    /// Records a clear of the tensor's bytes to zero, after the work recorded before it
    /// (f32 `0.0` and u32 `0` are the same bits).
    pub(crate) fn clear(&self) -> Result<(), Error> {
        let bytes = self.bytes();
        if !bytes.is_multiple_of(4) || !self.offset.is_multiple_of(4) {
            // wgpu clears whole 32-bit words: an odd f16 view shares its last or first
            // word with another tensor's element.
            return Err(Error::InvalidArgument {
                op: "clear".into(),
                detail: format!(
                    "{bytes} bytes at byte offset {} are not whole 32-bit words; use fill_",
                    self.offset
                ),
            });
        }
        if bytes > 0 {
            let dev = self.device();
            let mut st = dev.lock()?;
            st.encoder(&dev.inner)
                .clear_buffer(&self.storage.buffer, self.offset, Some(bytes));
            self.storage.last_batch.store(st.batch, Ordering::Relaxed);
            self.storage.id_max.store(UNKNOWN_MAX, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Overwrites the tensor's contents with `data` (same length, f32). Work recorded
    /// before the write sees the old contents.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] on a length mismatch, [`Error::DType`] for a u32 tensor.
    pub fn write(&self, data: &[f32]) -> Result<(), Error> {
        self.expect_dtype("Tensor::write", DType::F32)?;
        if data.len() != self.len() {
            return Err(Error::ShapeMismatch {
                op: "Tensor::write".into(),
                detail: format!(
                    "{} values for a tensor of shape {:?}",
                    data.len(),
                    self.shape
                ),
            });
        }
        let dev = self.device();
        let mut st = dev.lock()?;
        if self.storage.last_batch.load(Ordering::Relaxed) == st.batch {
            // `write_buffer` would land before the pending commands that use this buffer.
            st.submit(&dev.inner);
        }
        drop(st);
        if !data.is_empty() {
            dev.inner.queue.write_buffer(
                &self.storage.buffer,
                self.offset,
                bytemuck::cast_slice(data),
            );
        }
        Ok(())
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device holding the tensor.
    pub fn device(&self) -> &Device {
        &self.storage.dev
    }

    /// The wgpu buffer (possibly larger than the tensor: the pool rounds sizes up, and a
    /// view holds part of a buffer); the tensor's bytes start at [`Tensor::byte_offset`].
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.storage.buffer
    }

    /// Where the tensor's bytes start in [`Tensor::buffer`]: 0 except for views.
    pub fn byte_offset(&self) -> u64 {
        self.offset
    }

    /// Elements `start..start + len(shape)` of this tensor's data as a tensor of `shape`
    /// sharing its buffer (no copy: writes through one show in the other), when they fit
    /// and the view's first byte lands on the device's storage offset alignment
    /// (`min_storage_buffer_offset_alignment`, which a kernel binding needs); `None`
    /// otherwise (copy with `ops::narrow` then). For results that live side by side in
    /// one buffer: a layer norm's two weight gradients, an optimizer's flat state.
    ///
    /// ```
    /// # let dev = tang_runtime::Device::new()?;
    /// let align = dev.info().limits.min_storage_buffer_offset_alignment as usize / 4;
    /// let flat = tang_runtime::Tensor::zeros(&dev, &[2 * align])?;
    /// let second = flat.view_at(align, &[align]).ok_or("aligned")?;
    /// second.write(&vec![1.0; align])?;
    /// assert_eq!(flat.to_vec()?[align], 1.0);
    /// assert!(flat.view_at(2 * align, &[1]).is_none()); // past the end
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn view_at(&self, start: usize, shape: &[usize]) -> Option<Tensor> {
        let len = Size::product(shape).get()?;
        if start.checked_add(len)? > self.len {
            return None;
        }
        let offset = self.offset + (start * self.dtype.size()) as u64;
        if !self.device().is_view_aligned(offset) {
            return None;
        }
        Some(Tensor {
            storage: self.storage.clone(),
            offset,
            shape: shape.into(),
            len,
            dtype: self.dtype,
        })
    }

    /// Size of the tensor's data in bytes.
    pub fn bytes(&self) -> u64 {
        // At most the device's buffer size limit: checked when the tensor was allocated.
        self.len as u64 * self.dtype.size() as u64
    }

    /// Whether two tensors share one buffer.
    pub fn same_buffer(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// Whether two tensors' bytes overlap: they share a buffer and their ranges (rounded
    /// up to whole 16-byte `vec4`s, as kernels bind them) meet. Views of one buffer (a
    /// layer norm's weight and bias gradients) share it without overlapping.
    ///
    /// ```
    /// # let dev = tang_runtime::Device::new()?;
    /// let t = tang_runtime::Tensor::zeros(&dev, &[4])?;
    /// assert!(t.overlaps(&t.reshape(&[2, 2])?));
    /// assert!(!t.overlaps(&tang_runtime::Tensor::zeros(&dev, &[4])?));
    /// # Ok::<(), tang_runtime::Error>(())
    /// ```
    pub fn overlaps(&self, other: &Tensor) -> bool {
        let end = |t: &Tensor| t.offset + t.bytes().div_ceil(16).max(1) * 16;
        self.same_buffer(other) && self.offset < end(other) && other.offset < end(self)
    }

    /// Whether this handle is the only one to its buffer (no clone or reshape of it is
    /// alive), so writing in place cannot change what another tensor holds.
    ///
    /// ```
    /// # let dev = tang_runtime::Device::new()?;
    /// let t = tang_runtime::Tensor::zeros(&dev, &[4])?;
    /// assert!(t.is_sole_owner());
    /// let view = t.reshape(&[2, 2])?;
    /// assert!(!t.is_sole_owner() && !view.is_sole_owner());
    /// # Ok::<(), tang_runtime::Error>(())
    /// ```
    pub fn is_sole_owner(&self) -> bool {
        Arc::strong_count(&self.storage) == 1
    }

    /// The same data with another shape of the same element count (no copy).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when the element counts differ.
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor, Error> {
        if Size::product(shape).get() != Some(self.len) {
            return Err(Error::ShapeMismatch {
                op: "reshape".into(),
                detail: format!(
                    "cannot reshape {:?} ({} elements) to {shape:?} ({} elements)",
                    self.shape,
                    self.len(),
                    Size::product(shape)
                ),
            });
        }
        Ok(Tensor {
            storage: self.storage.clone(),
            offset: self.offset,
            shape: shape.into(),
            len: self.len,
            dtype: self.dtype,
        })
    }

    pub(crate) fn expect_dtype(&self, op: &str, want: DType) -> Result<(), Error> {
        if self.dtype != want {
            return Err(Error::DType {
                op: op.into(),
                expected: want,
                got: self.dtype,
            });
        }
        Ok(())
    }

    /// Fails with [`Error::DeviceMismatch`] unless the tensor lives on `dev`; `what` names
    /// the tensor in the message and is formatted only then, so a launch can pass
    /// `format_args!` without allocating.
    pub(crate) fn expect_device(
        &self,
        op: &str,
        what: impl std::fmt::Display,
        dev: &Device,
    ) -> Result<(), Error> {
        if !self.device().same(dev) {
            return Err(Error::DeviceMismatch {
                op: op.into(),
                what: what.to_string(),
                expected: dev.info().name.clone(),
                got: self.device().info().name.clone(),
            });
        }
        Ok(())
    }
}
