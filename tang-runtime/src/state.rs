//! The recording state of a device: the open command encoder and compute pass, the
//! uniform arena of the open batch, the buffer pool and the pipeline cache.
//!
//! # Ordering rules (why the code below is shaped as it is)
//! `queue.write_buffer` takes effect at the *next* submit, *before* the commands recorded
//! in that batch. So:
//! - uniforms of a batch live in a CPU-side arena written to the GPU arena buffer just
//!   before the batch is submitted, and the arena is only reused after that submit;
//! - a dropped tensor whose buffer the open batch uses goes back to the pool only after
//!   the batch is submitted (otherwise an upload into the reused buffer would land before
//!   the pending command that reads the old contents);
//! - a write into a live tensor that the open batch uses submits the batch first.

use crate::bind_groups::BindGroups;
use crate::error::Error;
use crate::info::{Gpu, Stats};
use crate::pipeline::Cache;
use crate::pool::{Pool, size_class};
use crate::profile::Profiler;

/// Bytes of the uniform arena: room for thousands of launches per batch.
const ARENA_BYTES: u64 = 1 << 20;

/// Launches in the first batch after a submit that was not a full batch's (a sync, a
/// read, a flush): the GPU has probably run dry there, so the batch goes out early and
/// the GPU works while the host records the next one. Each full batch after it doubles,
/// up to `DeviceOptions::batch_size`.
const FIRST_BATCH: u32 = 16;

/// Usage of every tensor buffer.
pub(crate) const TENSOR_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

pub(crate) struct State {
    pass: Option<wgpu::ComputePass<'static>>,
    encoder: Option<wgpu::CommandEncoder>,
    /// Id of the open (not yet submitted) batch.
    pub batch: u64,
    /// Dispatches recorded in the open batch.
    recorded: u32,
    /// Dispatches after which the open batch is submitted (see [`FIRST_BATCH`]).
    batch_limit: u32,
    arena: Vec<u8>,
    pub arena_buf: wgpu::Buffer,
    align: u64,
    /// Buffers of dropped tensors that the open batch uses: reusable by GPU writes
    /// recorded later in the batch (ordered after it), not by uploads.
    deferred: Pool,
    pub pool: Pool,
    pub cache: Cache,
    /// Bind groups of earlier launches, reused when a launch binds the same buffers.
    pub bind_groups: BindGroups,
    /// Scratch lists of one launch (its uniforms' dynamic offsets and sizes), kept so
    /// recording a launch does not allocate them.
    pub uniform_offsets: Vec<u32>,
    pub uniform_sizes: Vec<u64>,
    bytes_in_use: u64,
    allocations: u64,
    launches: u64,
    submits: u64,
    /// Host time inside encoding and submitting batches (see `Stats::submit_time`).
    submit_time: std::time::Duration,
    /// Reads back to the host started (see `Stats::host_reads`).
    pub host_reads: u64,
    /// Per-kernel GPU timing, while [`crate::Device::start_profiling`] is in effect.
    pub profiler: Option<Profiler>,
}

impl Drop for State {
    fn drop(&mut self) {
        // A pass must end before its encoder goes away.
        self.pass.take();
    }
}

impl State {
    /// `native_f16`: the f16 conversions the device runs natively ([`crate::f16_native`]).
    pub fn new(
        device: &wgpu::Device,
        limits: &wgpu::Limits,
        native_f16: crate::f16_native::NativeF16,
    ) -> State {
        let arena_buf = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tang uniform arena"),
            size: ARENA_BYTES,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        State {
            pass: None,
            encoder: None,
            batch: 0,
            recorded: 0,
            batch_limit: FIRST_BATCH,
            arena: Vec::new(),
            arena_buf,
            align: u64::from(limits.min_uniform_buffer_offset_alignment.max(16)),
            deferred: Pool::default(),
            pool: Pool::default(),
            cache: Cache::new(native_f16),
            bind_groups: BindGroups::default(),
            uniform_offsets: Vec::new(),
            uniform_sizes: Vec::new(),
            bytes_in_use: 0,
            allocations: 0,
            launches: 0,
            submits: 0,
            submit_time: std::time::Duration::ZERO,
            host_reads: 0,
            profiler: None,
        }
    }

    pub fn stats(&self) -> Stats {
        Stats {
            bytes_in_use: self.bytes_in_use,
            bytes_pooled: self.pool.bytes_pooled + self.deferred.bytes_pooled,
            allocations: self.allocations,
            pipelines_created: self.cache.pipelines_created,
            shader_modules_created: self.cache.modules_created,
            bind_groups_created: self.bind_groups.created,
            launches: self.launches,
            submits: self.submits,
            submit_time: self.submit_time,
            host_reads: self.host_reads,
        }
    }

    /// The open encoder, with any open compute pass ended (for copies and clears).
    pub fn encoder(&mut self, inner: &Gpu) -> &mut wgpu::CommandEncoder {
        self.pass.take();
        self.encoder.get_or_insert_with(|| {
            inner
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("tang batch"),
                })
        })
    }

    /// The open compute pass, begun if needed. Consecutive dispatches share one pass.
    pub fn pass(&mut self, inner: &Gpu) -> &mut wgpu::ComputePass<'static> {
        let encoder = &mut self.encoder;
        self.pass.get_or_insert_with(|| {
            encoder
                .get_or_insert_with(|| {
                    inner
                        .device
                        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                            label: Some("tang batch"),
                        })
                })
                .begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("tang"),
                    timestamp_writes: None,
                })
                .forget_lifetime()
        })
    }

    /// Records one dispatch in the open compute pass (bracketed by timestamps while
    /// profiling). The caller made room for it first (see `has_room_for_launch`).
    pub fn dispatch(
        &mut self,
        inner: &Gpu,
        name: &str,
        pipeline: &wgpu::ComputePipeline,
        group: &wgpu::BindGroup,
        offsets: &[u32],
        workgroups: [u32; 3],
    ) {
        self.pass(inner);
        let Some(pass) = self.pass.as_mut() else {
            return;
        };
        if let Some(p) = self.profiler.as_mut() {
            p.begin(pass, name, workgroups);
        }
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, group, offsets);
        pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
        if let Some(p) = self.profiler.as_ref() {
            p.end(pass);
        }
    }

    /// Copies `bytes` (padded to 16) into the arena; returns its offset and padded size,
    /// or `None` when the arena is full (submit and retry).
    pub fn push_uniform(&mut self, bytes: &[u8]) -> Option<(u32, u64)> {
        let offset = (self.arena.len() as u64).next_multiple_of(self.align);
        let size = (bytes.len() as u64).max(16).next_multiple_of(16);
        if offset + size > ARENA_BYTES {
            return None;
        }
        self.arena.resize(offset as usize, 0);
        self.arena.extend_from_slice(bytes);
        self.arena.resize((offset + size) as usize, 0);
        Some((offset as u32, size))
    }

    /// Whether the open batch has room for one more launch with uniforms of these sizes
    /// (the arena, and the profiler's timestamps while profiling); if not, submit first.
    pub fn has_room_for_launch(&self, uniform_sizes: impl Iterator<Item = usize>) -> bool {
        self.arena_fits(uniform_sizes) && self.profiler.as_ref().is_none_or(Profiler::has_room)
    }

    /// Whether `bytes` more of uniforms fit in the arena of the open batch.
    pub fn arena_fits(&self, uniform_sizes: impl Iterator<Item = usize>) -> bool {
        let mut end = self.arena.len() as u64;
        for s in uniform_sizes {
            end = end.next_multiple_of(self.align) + (s as u64).max(16).next_multiple_of(16);
        }
        end <= ARENA_BYTES
    }

    /// Counts a recorded dispatch; submits when the batch is full.
    pub fn recorded_dispatch(&mut self, inner: &Gpu) {
        self.recorded += 1;
        self.launches += 1;
        let limit = self.batch_limit.min(inner.opts.batch_size.max(1));
        if self.recorded >= limit {
            self.submit(inner);
            self.batch_limit = limit.saturating_mul(2);
        }
    }

    /// Submits the open batch (uniforms first), then releases buffers it kept alive.
    pub fn submit(&mut self, inner: &Gpu) {
        self.pass.take();
        if let Some(mut enc) = self.encoder.take() {
            if !self.arena.is_empty() {
                inner.queue.write_buffer(&self.arena_buf, 0, &self.arena);
                self.arena.clear();
            }
            let profiled = self.profiler.as_ref().is_some_and(|p| p.resolve(&mut enc));
            // web-time: std's clock panics in a browser (wasm32), which runs this path too.
            let start = web_time::Instant::now();
            inner.queue.submit([enc.finish()]);
            self.submit_time += start.elapsed();
            self.submits += 1;
            if profiled && let Some(p) = self.profiler.as_mut() {
                p.collect(&inner.device);
            }
        }
        self.batch += 1;
        self.recorded = 0;
        self.batch_limit = FIRST_BATCH;
        self.deferred.drain_into(&mut self.pool, inner.pool_limit);
    }

    /// A buffer of at least `bytes` bytes (its size class), from the pool when possible,
    /// with the batch that last used it. `gpu_written`: the buffer's first contents come
    /// from commands recorded later (a launch output, a clear), so a buffer still used by
    /// the open batch will do; otherwise (an upload) only an idle one.
    pub fn alloc(
        &mut self,
        inner: &Gpu,
        bytes: u64,
        gpu_written: bool,
    ) -> Result<(wgpu::Buffer, u64, u64), Error> {
        let limit = inner.info.limits.max_buffer_size;
        if bytes > limit {
            return Err(Error::TooLarge {
                what: "tensor buffer (bytes)".into(),
                requested: bytes,
                limit,
            });
        }
        // A request that fits the limit but whose rounded-up class would not gets a buffer
        // of exactly its size (still pooled, under that size).
        let class = size_class(bytes)
            .filter(|&c| c <= limit)
            .unwrap_or(bytes.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT));
        if gpu_written && let Some(b) = self.deferred.take(class) {
            self.bytes_in_use += class;
            return Ok((b, class, self.batch));
        }
        let buf = match self.pool.take(class) {
            Some(b) => b,
            None => self.create_buffer(inner, class)?,
        };
        self.bytes_in_use += class;
        Ok((buf, class, u64::MAX))
    }

    /// A new tensor buffer of `class` bytes from the driver. When the device refuses it
    /// for lack of memory, the pool's free buffers are destroyed, the GPU is waited for
    /// (a destroyed buffer's memory returns once the work that used it has finished) and
    /// the allocation is tried once more, as PyTorch's caching allocator frees its cache
    /// before it reports an out-of-memory error.
    fn create_buffer(&mut self, inner: &Gpu, class: u64) -> Result<wgpu::Buffer, Error> {
        self.allocations += 1;
        let create = || {
            inner.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("tang tensor"),
                size: class,
                usage: TENSOR_USAGE,
                mapped_at_creation: false,
            })
        };
        // A browser answers the scope asynchronously, which this synchronous call cannot
        // wait for: there an out-of-memory error reaches the device's error handler and
        // the next read reports it.
        #[cfg(target_arch = "wasm32")]
        return Ok(create());
        #[cfg(not(target_arch = "wasm32"))]
        {
            let attempt = || {
                let scope = inner
                    .device
                    .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
                let buffer = create();
                pollster::block_on(scope.pop()).map_or(Ok(buffer), Err)
            };
            match attempt() {
                Ok(buffer) => Ok(buffer),
                Err(first) => {
                    let freed = self.pool.bytes_pooled;
                    self.pool.clear();
                    let _ = inner.device.poll(wgpu::PollType::wait_indefinitely());
                    attempt().map_err(|e| Error::OutOfMemory {
                        requested: class,
                        in_use: self.bytes_in_use,
                        detail: format!("{first}; after freeing {freed} pooled bytes: {e}"),
                    })
                }
            }
        }
    }

    /// Takes back the buffer of a dropped tensor last used by batch `last_batch`.
    pub fn release(&mut self, inner: &Gpu, buf: wgpu::Buffer, class: u64, last_batch: u64) {
        self.bytes_in_use = self.bytes_in_use.saturating_sub(class);
        if last_batch == self.batch && self.encoder.is_some() {
            self.deferred.give(class, buf, u64::MAX);
        } else {
            self.pool.give(class, buf, inner.pool_limit);
        }
    }
}
