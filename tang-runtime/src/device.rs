//! The GPU device: adapter choice, limits and features, error and device-lost tracking.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::Error;
use crate::info::{AdapterIndex, DeviceInfo, DeviceOptions, Gpu, Stats};
use crate::lifecycle::LifecycleToken;
use crate::profile::{Profile, Profiler};
use crate::state::State;

/// The pool's default limit on a software adapter: its buffers are host memory, shared
/// with everything else the machine runs (test suites run several devices at once).
const SOFTWARE_POOL_LIMIT: u64 = 4 << 30;

/// A pending check as the device holds it: type-erased, so the device names no tensor
/// (`checks.rs` puts its checks here and takes them back). Send where the device is shared
/// between threads; a page (WebAssembly) has one thread and non-Send GPU handles.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) type PendingCheck = Box<dyn std::any::Any + Send>;
/// A pending check as the device holds it (see the native definition).
#[cfg(target_arch = "wasm32")]
pub(crate) type PendingCheck = Box<dyn std::any::Any>;

/// A device's shared state: the wgpu handles and settings ([`Gpu`], reached through
/// `Deref`), error tracking, the recording state, and the pending GPU checks.
pub(crate) struct Inner {
    pub(crate) gpu: Gpu,
    pub(crate) lost: Arc<Mutex<Option<String>>>,
    pub(crate) is_lost: Arc<AtomicBool>,
    pub(crate) error: Arc<Mutex<Option<String>>>,
    pub(crate) state: Mutex<State>,
    /// GPU checks of ids the host knew nothing about, reported at the next read or sync
    /// (`checks.rs`). Their tensors hold the device (a cycle until the next read or sync
    /// drains them, which every training loop reaches).
    pub(crate) pending_checks: Mutex<Vec<PendingCheck>>,
    /// Filled when the device is dropped. Declared last, so it is released after the other
    /// fields (the pipelines, buffers and the wgpu device itself) are gone: see
    /// `lifecycle.rs` for why teardown is serialised.
    teardown: Option<LifecycleToken>,
}

impl std::ops::Deref for Inner {
    type Target = Gpu;
    fn deref(&self) -> &Gpu {
        &self.gpu
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.teardown = Some(LifecycleToken::acquire());
    }
}

/// A GPU device with its queue, pipeline cache, buffer pool and the batch of recorded
/// launches. Cheap to clone (shared); usable from several threads.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.inner.info.name)
            .field("backend", &self.inner.info.backend)
            .finish()
    }
}

/// Features tang uses when the adapter has them.
fn wanted_features() -> wgpu::Features {
    wgpu::Features::SUBGROUP
        | wgpu::Features::SUBGROUP_BARRIER
        | wgpu::Features::SHADER_F16
        | wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
        | wgpu::Features::PIPELINE_CACHE
}

/// Whether `adapter` runs tang's tensor-core matmul and attention: f16 in shaders,
/// subgroup operations, cooperative matrices with the 16x16x16 f16 x f16 + f32
/// configuration (the fragment shape the kernels are written for), and a fixed subgroup
/// size of 32 (a 128-thread workgroup is then four subgroups, each owning a quarter of the
/// output tile).
fn has_tensor_cores(adapter: &wgpu::Adapter, info: &wgpu::AdapterInfo) -> bool {
    // Subgroup operations: the tensor-core attention's two lanes of a row meet by shuffle.
    let needed = wgpu::Features::SHADER_F16
        | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        | wgpu::Features::SUBGROUP;
    use wgpu::CooperativeScalarType::{F16, F32};
    adapter.features().contains(needed)
        && info.subgroup_min_size == 32
        && info.subgroup_max_size == 32
        && adapter.cooperative_matrix_properties().iter().any(|p| {
            (p.m_size, p.n_size, p.k_size) == (16, 16, 16) && p.ab_type == F16 && p.cr_type == F32
        })
}

/// wgpu's experimental features: enabled only to reach the tensor cores.
#[allow(unsafe_code)]
fn experimental_features(tensor_cores: bool) -> wgpu::ExperimentalFeatures {
    if !tensor_cores {
        return wgpu::ExperimentalFeatures::disabled();
    }
    // SAFETY: wgpu marks cooperative matrices experimental (its validation of them may be
    // incomplete). tang uses them only in its own generated matmul and attention kernels,
    // which naga validates (`cargo test` checks every variant), index workgroup memory only
    // within their arrays, and are tested against an f64 reference on the GPUs that run
    // them (`scripts/gpu-tests.sh`). `DeviceOptions::tensor_cores` (`TANG_TENSOR_CORES=0`)
    // turns the feature off entirely.
    unsafe { wgpu::ExperimentalFeatures::enabled() }
}

fn type_rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

fn backend_rank(b: wgpu::Backend) -> u8 {
    match b {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        _ => 1,
    }
}

/// The adapters of `backends` whose name contains `filter` and that run compute shaders,
/// best first (discrete > integrated > virtual > software, then native backends), the
/// driver's order kept among equals.
async fn ranked_adapters(
    backends: wgpu::Backends,
    filter: Option<&str>,
) -> Vec<(wgpu::Adapter, wgpu::AdapterInfo)> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    let instance = wgpu::Instance::new(desc);
    let mut found = Vec::new();
    for adapter in instance.enumerate_adapters(backends).await {
        let info = adapter.get_info();
        if let Some(f) = filter
            && !info.name.to_lowercase().contains(f)
        {
            continue;
        }
        let caps = adapter.get_downlevel_capabilities();
        if !caps.flags.contains(wgpu::DownlevelFlags::COMPUTE_SHADERS) {
            continue;
        }
        found.push((adapter, info));
    }
    found.sort_by_key(|(_, i)| adapter_key(i));
    found
}

/// How good an adapter is for tang: lower is better.
fn adapter_key(i: &wgpu::AdapterInfo) -> (u8, u8) {
    (type_rank(i.device_type), backend_rank(i.backend))
}

/// The adapter `index` picks among the best-ranked ones (those of the first one's kind and
/// backend: a multi-GPU host's GPUs), the first without an index; `Err` names how many
/// there were when an exact index is past them.
fn choose_adapter(
    mut ranked: Vec<(wgpu::Adapter, wgpu::AdapterInfo)>,
    index: Option<AdapterIndex>,
) -> Result<Option<(wgpu::Adapter, wgpu::AdapterInfo)>, usize> {
    let Some(best) = ranked.first().map(|(_, i)| adapter_key(i)) else {
        return Ok(None);
    };
    let equals = ranked
        .iter()
        .take_while(|(_, i)| adapter_key(i) == best)
        .count();
    let at = match index {
        None => 0,
        Some(index) => index.resolve(equals).ok_or(equals)?,
    };
    Ok(Some(ranked.swap_remove(at)))
}

static SOFTWARE_NOTICE: AtomicBool = AtomicBool::new(false);

impl Device {
    /// Opens the best GPU (discrete > integrated > virtual > software), honouring
    /// `TANG_ADAPTER`, `TANG_BACKEND` and `TANG_CHECKED`. Blocks until the device is ready.
    ///
    /// # Errors
    /// [`Error::NoAdapter`] when no adapter is available (the message says what to
    /// install), [`Error::DeviceRequest`] when the adapter refuses.
    /// On WebAssembly it returns [`Error::Blocking`]: await [`Device::new_async`] there.
    pub fn new() -> Result<Device, Error> {
        #[cfg(target_arch = "wasm32")]
        {
            Err(Error::Blocking {
                call: "Device::new",
                instead: "Device::new_async",
            })
        }
        #[cfg(not(target_arch = "wasm32"))]
        Self::with_options(DeviceOptions::default())
    }

    /// [`Device::new`] without blocking.
    ///
    /// # Errors
    /// As [`Device::new`].
    pub async fn new_async() -> Result<Device, Error> {
        Self::with_options_async(DeviceOptions::default()).await
    }

    /// Opens a device with explicit options (blocking).
    ///
    /// # Errors
    /// As [`Device::new`]; on WebAssembly [`Error::Blocking`] (await
    /// [`Device::with_options_async`] there).
    pub fn with_options(opts: DeviceOptions) -> Result<Device, Error> {
        #[cfg(target_arch = "wasm32")]
        {
            drop(opts);
            Err(Error::Blocking {
                call: "Device::with_options",
                instead: "Device::with_options_async",
            })
        }
        #[cfg(not(target_arch = "wasm32"))]
        pollster::block_on(Self::with_options_async(opts))
    }

    /// Opens a device with explicit options.
    ///
    /// # Errors
    /// As [`Device::new`].
    pub async fn with_options_async(opts: DeviceOptions) -> Result<Device, Error> {
        // Without an explicit backend, try the native ones first: probing GL opens a
        // display connection (and prints errors on headless machines).
        // Serialised with other devices' creation and teardown (see `lifecycle.rs`).
        let _lifecycle = LifecycleToken::acquire();
        let tries = match opts.backends {
            Some(b) => vec![b],
            None => vec![wgpu::Backends::PRIMARY, wgpu::Backends::SECONDARY],
        };
        let backends = opts.backends.unwrap_or(wgpu::Backends::all());
        let filter = opts.adapter.as_ref().map(|s| s.to_lowercase());
        if let Ok(v) = std::env::var("TANG_ADAPTER_INDEX")
            && !v.trim().is_empty()
            && v.trim().parse::<usize>().is_err()
        {
            return Err(Error::InvalidArgument {
                op: "Device::new".into(),
                detail: format!(
                    "TANG_ADAPTER_INDEX={v:?} is not an adapter index: set it to 0, 1, ... or unset it"
                ),
            });
        }
        let mut best: Option<(wgpu::Adapter, wgpu::AdapterInfo)> = None;
        for b in tries {
            best = choose_adapter(
                ranked_adapters(b, filter.as_deref()).await,
                opts.adapter_index,
            )
            .map_err(|count| Error::InvalidArgument {
                op: "Device::new".into(),
                detail: format!(
                    "adapter index {:?} asked for, but only {count} adapter(s) of the best kind \
                         were found: pick an index below {count} (TANG_ADAPTER_INDEX or \
                         DeviceOptions::adapter_index)",
                    opts.adapter_index
                ),
            })?;
            if best.is_some() {
                break;
            }
        }
        let Some((adapter, ainfo)) = best else {
            return Err(Error::NoAdapter {
                detail: format!(
                    "backends {backends:?}{}",
                    filter
                        .map(|f| format!(", name containing {f:?}"))
                        .unwrap_or_default()
                ),
            });
        };
        let is_software = ainfo.device_type == wgpu::DeviceType::Cpu;
        if is_software && !SOFTWARE_NOTICE.swap(true, Ordering::Relaxed) {
            eprintln!(
                "tang: no hardware GPU found; using the software adapter {:?} (correct but slow)",
                ainfo.name
            );
        }
        let tensor_cores = opts.tensor_cores && has_tensor_cores(&adapter, &ainfo);
        let mut features = adapter.features() & wanted_features();
        if opts.shader_int64 {
            features |= adapter.features() & wgpu::Features::SHADER_INT64;
        }
        if tensor_cores {
            features |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        }
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("tang"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features: experimental_features(tensor_cores),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| Error::DeviceRequest(e.to_string()))?;

        let lost = Arc::new(Mutex::new(None));
        let is_lost = Arc::new(AtomicBool::new(false));
        {
            let lost = lost.clone();
            let is_lost = is_lost.clone();
            device.set_device_lost_callback(move |reason, msg| {
                if let Ok(mut l) = lost.lock() {
                    *l = Some(format!("{reason:?}: {msg}"));
                }
                is_lost.store(true, Ordering::SeqCst);
            });
        }
        // wgpu's default handler panics on a validation error; tang records the first one
        // and returns it from the next call instead.
        let error = Arc::new(Mutex::new(None::<String>));
        {
            let error = error.clone();
            device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                if let Ok(mut slot) = error.lock()
                    && slot.is_none()
                {
                    *slot = Some(e.to_string());
                }
            }));
        }
        // The narrowing's probe needs the builtins the widening's swap does.
        let widen = crate::f16_native::adapter_has_native(&adapter);
        let native_f16 = crate::f16_native::NativeF16 {
            widen,
            narrow: widen && crate::f16_native::probe_native_narrowing(&device, &queue),
        };
        let info = DeviceInfo {
            name: ainfo.name.clone(),
            backend: ainfo.backend,
            device_type: ainfo.device_type,
            driver: format!("{} {}", ainfo.driver, ainfo.driver_info),
            is_software,
            limits: limits.clone(),
            features,
            checked: opts.checked,
            subgroup_min_size: ainfo.subgroup_min_size,
            subgroup_max_size: ainfo.subgroup_max_size,
            tensor_cores,
            native_f16_rounding: native_f16.narrow,
        };
        let state = State::new(&device, &limits, native_f16);
        let pool_limit = opts.pool_limit.unwrap_or(if is_software {
            SOFTWARE_POOL_LIMIT
        } else {
            u64::MAX
        });
        Ok(Device {
            inner: Arc::new(Inner {
                gpu: Gpu {
                    device,
                    queue,
                    info,
                    opts,
                    pool_limit,
                },
                lost,
                is_lost,
                error,
                state: Mutex::new(state),
                pending_checks: Default::default(),
                teardown: None,
            }),
        })
    }

    /// The adapter, backend, limits and features of this device.
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The underlying wgpu device (for advanced users and the hand-written kernels).
    pub fn wgpu_device(&self) -> &wgpu::Device {
        &self.inner.device
    }

    /// The underlying wgpu queue.
    pub fn wgpu_queue(&self) -> &wgpu::Queue {
        &self.inner.queue
    }

    /// Whether two handles are the same device.
    pub fn same(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Fails with [`Error::DeviceLost`] or the first recorded wgpu error, if any.
    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.inner.is_lost.load(Ordering::SeqCst) {
            let msg = self.inner.lost.lock().ok().and_then(|l| l.clone());
            return Err(Error::DeviceLost(
                msg.unwrap_or_else(|| "unknown reason".into()),
            ));
        }
        let mut slot = self.inner.error.lock().map_err(|_| Error::Poisoned)?;
        match slot.take() {
            Some(e) => Err(Error::Wgpu(e)),
            None => Ok(()),
        }
    }

    /// Locks the recording state after checking the device is healthy.
    pub(crate) fn lock(&self) -> Result<MutexGuard<'_, State>, Error> {
        self.check()?;
        self.inner.state.lock().map_err(|_| Error::Poisoned)
    }

    /// Current resource and work counters.
    pub fn stats(&self) -> Stats {
        match self.inner.state.lock() {
            Ok(s) => s.stats(),
            Err(p) => p.into_inner().stats(),
        }
    }

    /// Submits every recorded launch without waiting for the GPU.
    ///
    /// # Errors
    /// [`Error::DeviceLost`], or a wgpu error raised by recorded work.
    pub fn flush(&self) -> Result<(), Error> {
        let mut st = self.lock()?;
        st.submit(&self.inner);
        drop(st);
        self.check()
    }

    /// Submits every recorded launch and waits until the GPU has finished all of it.
    ///
    /// # Errors
    /// [`Error::DeviceLost`], or a wgpu error raised by recorded work; on WebAssembly
    /// [`Error::Blocking`] after submitting (await [`Tensor::to_vec_async`](crate::Tensor::to_vec_async) there).
    pub fn sync(&self) -> Result<(), Error> {
        self.flush()?;
        self.wait()?;
        self.report_index_faults()
    }

    /// Waits for everything submitted so far. WebAssembly cannot wait (wgpu's poll
    /// returns at once there, so a wait would report work as finished that is not):
    /// awaiting a read is the way to wait there.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn wait(&self) -> Result<(), Error> {
        Err(Error::Blocking {
            call: "Device::sync",
            instead: "Tensor::to_vec_async (it waits for every launch recorded before it)",
        })
    }

    /// Waits for everything submitted so far.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn wait(&self) -> Result<(), Error> {
        self.inner
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| match e {
                wgpu::PollError::Timeout => Error::DeviceLost(e.to_string()),
                other => Error::Wgpu(other.to_string()),
            })?;
        self.check()
    }
}

impl Device {
    /// Starts measuring the GPU time of every kernel launched from now on (like
    /// `torch.profiler.profile` with CUDA activity): each dispatch is bracketed by
    /// timestamps, and each submit waits for the GPU to read them. Whatever was recorded
    /// before is submitted first, so it is not counted. End with
    /// [`Device::finish_profiling`].
    ///
    /// ```no_run
    /// use tang_runtime::{Device, Tensor};
    /// let dev = Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0f32; 1024], &[32, 32])?;
    /// dev.start_profiling()?;
    /// let y = x.matmul(&x)?;
    /// let profile = dev.finish_profiling()?;
    /// print!("{}", profile.table(10, 1));
    /// # Ok::<(), tang_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the adapter cannot write timestamps inside compute
    /// passes (wgpu's `TIMESTAMP_QUERY_INSIDE_PASSES`) or on WebAssembly (reading the
    /// timestamps back would block); [`Error::DeviceLost`].
    pub fn start_profiling(&self) -> Result<(), Error> {
        let needed =
            wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES;
        if !self.inner.info.features.contains(needed) || cfg!(target_arch = "wasm32") {
            return Err(Error::Unsupported {
                what: "Device::start_profiling".into(),
                detail: format!(
                    "adapter `{}` cannot write timestamps inside compute passes (wgpu features \
                     TIMESTAMP_QUERY and TIMESTAMP_QUERY_INSIDE_PASSES), or this is WebAssembly; \
                     time whole steps with Device::sync instead",
                    self.inner.info.name
                ),
            });
        }
        let mut st = self.lock()?;
        st.submit(&self.inner);
        st.profiler = Some(Profiler::new(&self.inner.device, &self.inner.queue));
        drop(st);
        self.check()
    }

    /// Submits what is recorded, stops profiling and returns the GPU time per kernel
    /// since [`Device::start_profiling`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when profiling was not started; [`Error::Map`] when the
    /// timestamps could not be read back; [`Error::DeviceLost`].
    pub fn finish_profiling(&self) -> Result<Profile, Error> {
        let mut st = self.lock()?;
        st.submit(&self.inner);
        let profiler = st.profiler.take();
        drop(st);
        self.check()?;
        profiler
            .ok_or_else(|| Error::InvalidArgument {
                op: "Device::finish_profiling".into(),
                detail: "profiling was not started: call Device::start_profiling first".into(),
            })?
            .into_profile()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapter_ranking_prefers_hardware() {
        assert!(
            type_rank(wgpu::DeviceType::DiscreteGpu) < type_rank(wgpu::DeviceType::IntegratedGpu)
        );
        assert!(type_rank(wgpu::DeviceType::VirtualGpu) < type_rank(wgpu::DeviceType::Cpu));
        assert!(backend_rank(wgpu::Backend::Vulkan) < backend_rank(wgpu::Backend::Gl));
    }
}
