//! Reading a tensor back to the host: a copy into a staging buffer, a submit, and a map,
//! blocking (`to_vec`, `to_vec_u32`, `item`) or async. Reads flush: every launch recorded
//! before a read is submitted with it, so a read never sees stale data.

use std::sync::{Arc, Mutex};
use std::task::Poll;

use super::{DType, Tensor};
use crate::error::Error;

/// What wgpu reports when a map finishes.
type MapOutcome = Result<(), wgpu::BufferAsyncError>;

/// Where wgpu's map callback leaves its outcome, and the task to wake when it does.
#[derive(Default)]
struct MapSlot {
    outcome: Option<MapOutcome>,
    /// An async read waiting for the outcome. On WebAssembly only the callback can make
    /// progress (the browser delivers it from its event loop), so the read sleeps until
    /// woken instead of asking to be polled again, which would never yield to that loop.
    waker: Option<std::task::Waker>,
}

/// How long a blocking read waits for wgpu to deliver a finished map (run by another
/// thread's poll) before reporting [`Error::Map`].
#[cfg(not(target_arch = "wasm32"))]
const READ_CALLBACK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

impl Tensor {
    /// Records a copy into a staging buffer and submits everything recorded so far.
    fn start_read(&self) -> Result<Option<wgpu::Buffer>, Error> {
        // Copies move whole 4-byte words: an odd count of f16 values reads one pad half
        // (inside the buffer: pool size classes are multiples of 16 bytes), dropped later.
        let bytes = self.bytes().next_multiple_of(4);
        if bytes == 0 {
            return Ok(None);
        }
        let dev = self.device();
        let staging = dev.inner.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tang read"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut st = dev.lock()?;
        st.host_reads += 1;
        st.encoder(&dev.inner).copy_buffer_to_buffer(
            &self.storage.buffer,
            self.offset,
            &staging,
            0,
            bytes,
        );
        st.submit(&dev.inner);
        drop(st);
        dev.check()?;
        Ok(Some(staging))
    }

    /// Asks wgpu to map `staging` for reading; the slot receives the outcome when a poll
    /// (on any thread) completes the map.
    fn request_map(staging: &wgpu::Buffer) -> Arc<Mutex<MapSlot>> {
        let slot = Arc::new(Mutex::new(MapSlot::default()));
        let s2 = slot.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let waker = match s2.lock() {
                Ok(mut s) => {
                    s.outcome = Some(r);
                    s.waker.take()
                }
                Err(_) => None,
            };
            // Woken after the lock is released: the woken task may run at once.
            if let Some(w) = waker {
                w.wake();
            }
        });
        slot
    }

    fn finish_read(staging: &wgpu::Buffer) -> Result<Vec<u8>, Error> {
        let view = staging
            .get_mapped_range(..)
            .map_err(|e| Error::Map(e.to_string()))?;
        let out = view.to_vec();
        drop(view);
        staging.unmap();
        Ok(out)
    }

    /// A blocking read cannot complete on WebAssembly: the map finishes only when control
    /// returns to the browser's event loop.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn read_bytes(&self, call: &'static str) -> Result<Vec<u8>, Error> {
        Err(Error::Blocking {
            call,
            instead: "Tensor::to_vec_async or Tensor::to_vec_u32_async",
        })
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn read_bytes(&self, _call: &'static str) -> Result<Vec<u8>, Error> {
        let Some(staging) = self.start_read()? else {
            return Ok(Vec::new());
        };
        let slot = Self::request_map(&staging);
        // wgpu runs map callbacks on whichever thread polls, after releasing its locks: when
        // another thread polls the same device at the same time, our `wait` can return while
        // that thread is still about to run our callback. So wait until the callback has
        // run, polling again in between (a finished poll returns at once).
        let started = web_time::Instant::now();
        loop {
            self.device().wait()?;
            let r = slot.lock().map_err(|_| Error::Poisoned)?.outcome.take();
            match r {
                Some(Ok(())) => return Self::finish_read(&staging),
                Some(Err(e)) => return Err(Error::Map(e.to_string())),
                None if started.elapsed() > READ_CALLBACK_TIMEOUT => {
                    return Err(Error::Map(format!(
                        "the GPU finished but the read was not delivered within {} s",
                        READ_CALLBACK_TIMEOUT.as_secs()
                    )));
                }
                None => std::thread::sleep(std::time::Duration::from_micros(20)),
            }
        }
    }

    pub(crate) async fn read_bytes_async(&self) -> Result<Vec<u8>, Error> {
        let Some(staging) = self.start_read()? else {
            return Ok(Vec::new());
        };
        let slot = Self::request_map(&staging);
        let dev = self.device().clone();
        let r = std::future::poll_fn(|cx| {
            // Native wgpu needs polling to make progress; poll without blocking and
            // ask to be polled again until the map completes.
            #[cfg(not(target_arch = "wasm32"))]
            if let Err(e) = dev.inner.device.poll(wgpu::PollType::Poll) {
                return Poll::Ready(Err(Error::Wgpu(e.to_string())));
            }
            match slot.lock() {
                Err(_) => Poll::Ready(Err(Error::Poisoned)),
                Ok(mut s) => match s.outcome.take() {
                    Some(r) => Poll::Ready(r.map_err(|e| Error::Map(e.to_string()))),
                    None => {
                        // The browser runs the map callback, which wakes this task.
                        #[cfg(target_arch = "wasm32")]
                        {
                            s.waker = Some(cx.waker().clone());
                        }
                        #[cfg(not(target_arch = "wasm32"))]
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    }
                },
            }
        })
        .await;
        dev.check()?;
        r?;
        Self::finish_read(&staging)
    }

    /// Downloads an f32 tensor (after every launch recorded before this call); an f16
    /// tensor's values are widened to f32 (exactly).
    ///
    /// # Errors
    /// [`Error::DType`] for a u32 tensor, [`Error::DeviceLost`], [`Error::Map`]; on
    /// WebAssembly [`Error::Blocking`] (await [`Tensor::to_vec_async`] there).
    pub fn to_vec(&self) -> Result<Vec<f32>, Error> {
        if self.dtype() == DType::F16 {
            return Ok(widen(&self.to_vec_f16()?));
        }
        self.download("to_vec", "Tensor::to_vec", DType::F32)
    }

    /// [`Tensor::to_vec`] without blocking the thread.
    ///
    /// # Errors
    /// As [`Tensor::to_vec`].
    pub async fn to_vec_async(&self) -> Result<Vec<f32>, Error> {
        if self.dtype() == DType::F16 {
            return Ok(widen(
                &self
                    .download_async::<half::f16>("to_vec_async", DType::F16)
                    .await?,
            ));
        }
        self.download_async("to_vec_async", DType::F32).await
    }

    /// Downloads an f16 tensor as its f16 values.
    ///
    /// # Errors
    /// [`Error::DType`] for an f32 or u32 tensor (convert with [`Tensor::to_dtype`]
    /// first), [`Error::DeviceLost`], [`Error::Map`]; on WebAssembly [`Error::Blocking`].
    pub fn to_vec_f16(&self) -> Result<Vec<half::f16>, Error> {
        self.download("to_vec_f16", "Tensor::to_vec_f16", DType::F16)
    }

    /// Downloads a u32 tensor.
    ///
    /// # Errors
    /// [`Error::DType`] for an f32 tensor, [`Error::DeviceLost`], [`Error::Map`]; on
    /// WebAssembly [`Error::Blocking`] (await [`Tensor::to_vec_u32_async`] there).
    pub fn to_vec_u32(&self) -> Result<Vec<u32>, Error> {
        self.download("to_vec_u32", "Tensor::to_vec_u32", DType::U32)
    }

    /// [`Tensor::to_vec_u32`] without blocking the thread.
    ///
    /// # Errors
    /// As [`Tensor::to_vec_u32`].
    pub async fn to_vec_u32_async(&self) -> Result<Vec<u32>, Error> {
        self.download_async("to_vec_u32_async", DType::U32).await
    }

    /// The elements of a tensor of `dtype` as `T` (blocking); `op` and `call` name the
    /// caller in a dtype or a blocking error.
    fn download<T: bytemuck::Pod>(
        &self,
        op: &str,
        call: &'static str,
        dtype: DType,
    ) -> Result<Vec<T>, Error> {
        self.expect_dtype(op, dtype)?;
        // Ids checked on the GPU since the last read report here (the checks' flags are
        // read only when such checks ran).
        self.device().report_index_faults()?;
        Ok(self.elements(&self.read_bytes(call)?))
    }

    /// The tensor's elements from the bytes read back (which may end in a pad half).
    fn elements<T: bytemuck::Pod>(&self, bytes: &[u8]) -> Vec<T> {
        let used = bytes.len().min(self.bytes() as usize);
        bytemuck::pod_collect_to_vec(&bytes[..used])
    }

    /// [`Tensor::download`] without blocking the thread.
    async fn download_async<T: bytemuck::Pod>(
        &self,
        op: &str,
        dtype: DType,
    ) -> Result<Vec<T>, Error> {
        self.expect_dtype(op, dtype)?;
        self.device().report_index_faults_async().await?;
        Ok(self.elements(&self.read_bytes_async().await?))
    }

    /// Downloads a one-element f32 tensor as a number.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when the tensor has more than one element; as [`Tensor::to_vec`].
    pub fn item(&self) -> Result<f32, Error> {
        if self.len() != 1 {
            return Err(Error::ShapeMismatch {
                op: "item".into(),
                detail: format!(
                    "item() needs one element, the tensor has shape {:?}",
                    self.shape
                ),
            });
        }
        let v = self.to_vec()?;
        v.first()
            .copied()
            .ok_or_else(|| Error::Map("empty download".into()))
    }
}

/// f16 values widened to f32 (exact).
fn widen(values: &[half::f16]) -> Vec<f32> {
    values.iter().map(|h| h.to_f32()).collect()
}
