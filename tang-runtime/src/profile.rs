//! GPU time per kernel, measured with timestamp queries written around every dispatch:
//! what `torch.profiler` reports as a kernel's "CUDA time", for finding where a training
//! step goes.
//!
//! While profiling, each dispatch is bracketed by two timestamps inside the shared compute
//! pass; at every submit the timestamps of that batch are resolved, copied to a readable
//! buffer and read back (the submit then waits for the GPU, which is why profiling is
//! opt-in and not for timing a whole step). Times are grouped by kernel name and grid, so
//! two shapes of one kernel (a matmul at two sizes) are two rows.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::error::Error;

/// Timestamps one query set holds (wgpu's maximum); two per dispatch.
const QUERIES: u32 = wgpu::QUERY_SET_MAX_QUERIES;

/// GPU time of one kernel (name and grid) over a profiled stretch of work.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTime {
    /// The kernel's name and its grid (workgroups in x, y, z), e.g. `matmul_64x64 [6,256,1]`.
    pub kernel: String,
    /// Dispatches of it.
    pub launches: u64,
    /// GPU nanoseconds between each dispatch's two timestamps, summed.
    pub gpu_ns: f64,
}

/// What [`Device::finish_profiling`](crate::Device::finish_profiling) returns: GPU time per kernel, largest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// One row per kernel name and grid, sorted by `gpu_ns`, largest first.
    pub kernels: Vec<KernelTime>,
    /// GPU nanoseconds from the end of one dispatch to the start of the next in the same
    /// submit, summed: barriers and pipeline switches, time no kernel is counted for.
    pub gaps_ns: f64,
}

impl Profile {
    /// GPU nanoseconds of every profiled dispatch together.
    pub fn total_ns(&self) -> f64 {
        self.kernels.iter().map(|k| k.gpu_ns).sum()
    }

    /// Dispatches profiled.
    pub fn launches(&self) -> u64 {
        self.kernels.iter().map(|k| k.launches).sum()
    }

    /// A text table of the `top` largest rows (milliseconds, share of the total, launches),
    /// divided by `per` (e.g. the number of training steps profiled) so rows read per step.
    pub fn table(&self, top: usize, per: u64) -> String {
        let per = per.max(1) as f64;
        let total = self.total_ns().max(1.0);
        let mut out = format!(
            "{:>9} {:>6} {:>8}  kernel [grid]\n",
            "ms", "share", "launches"
        );
        for k in self.kernels.iter().take(top) {
            let _ = writeln!(
                out,
                "{:>9.3} {:>5.1}% {:>8.1}  {}",
                k.gpu_ns / per / 1e6,
                100.0 * k.gpu_ns / total,
                k.launches as f64 / per,
                k.kernel
            );
        }
        let rest: f64 = self.kernels.iter().skip(top).map(|k| k.gpu_ns).sum();
        let _ = writeln!(
            out,
            "{:>9.3} {:>5.1}% {:>8}  ({} other rows)\n{:>9.3} 100.0% {:>8.1}  total\n{:>9.3}                  between dispatches",
            rest / per / 1e6,
            100.0 * rest / total,
            "",
            self.kernels.len().saturating_sub(top),
            total / per / 1e6,
            self.launches() as f64 / per,
            self.gaps_ns / per / 1e6
        );
        out
    }
}

/// The profiling state of a device: the query set of the open batch and the totals.
pub(crate) struct Profiler {
    queries: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// Kernel (name and grid) of each dispatch of the open batch, in order.
    pending: Vec<String>,
    totals: HashMap<String, (u64, f64)>,
    gaps_ns: f64,
    /// Nanoseconds per timestamp tick. Read only where timestamps are collected, which a
    /// browser (wasm32) cannot do: it cannot block on the readback.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    period_ns: f64,
    /// The first failure reading timestamps back, reported by `finish_profiling`.
    failure: Option<String>,
}

impl Profiler {
    pub(crate) fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Profiler {
        let bytes = u64::from(QUERIES) * 8;
        Profiler {
            queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("tang profile"),
                ty: wgpu::QueryType::Timestamp,
                count: QUERIES,
            }),
            resolved: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("tang profile resolve"),
                size: bytes,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            readback: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("tang profile readback"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            pending: Vec::new(),
            totals: HashMap::new(),
            gaps_ns: 0.0,
            period_ns: f64::from(queue.get_timestamp_period()),
            failure: None,
        }
    }

    /// Whether the open batch has room for one more bracketed dispatch.
    pub(crate) fn has_room(&self) -> bool {
        (self.pending.len() as u32 + 1) * 2 <= QUERIES
    }

    /// Writes the timestamp before a dispatch of `kernel` with `grid`.
    pub(crate) fn begin(&mut self, pass: &mut wgpu::ComputePass<'_>, kernel: &str, grid: [u32; 3]) {
        let i = self.pending.len() as u32;
        pass.write_timestamp(&self.queries, 2 * i);
        self.pending
            .push(format!("{kernel} [{},{},{}]", grid[0], grid[1], grid[2]));
    }

    /// Writes the timestamp after the dispatch `begin` announced.
    pub(crate) fn end(&self, pass: &mut wgpu::ComputePass<'_>) {
        let i = self.pending.len() as u32 - 1;
        pass.write_timestamp(&self.queries, 2 * i + 1);
    }

    /// Records the resolve of the open batch's timestamps into `encoder` (after its pass
    /// ended). Returns whether there is anything to read after the submit.
    pub(crate) fn resolve(&self, encoder: &mut wgpu::CommandEncoder) -> bool {
        let n = self.pending.len() as u32 * 2;
        if n == 0 {
            return false;
        }
        encoder.resolve_query_set(&self.queries, 0..n, &self.resolved, 0);
        encoder.copy_buffer_to_buffer(&self.resolved, 0, &self.readback, 0, u64::from(n) * 8);
        true
    }

    /// After the submit of a resolved batch: waits for it, reads the timestamps and adds
    /// each dispatch's time to its kernel's total.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn collect(&mut self, device: &wgpu::Device) {
        let bytes = self.pending.len() as u64 * 16;
        let (tx, rx) = std::sync::mpsc::channel();
        self.readback
            .slice(0..bytes)
            .map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
        let waited = device.poll(wgpu::PollType::wait_indefinitely());
        let read = match (waited, rx.recv()) {
            (Ok(_), Ok(Ok(()))) => {
                let ticks = self
                    .readback
                    .get_mapped_range(0..bytes)
                    .map(|view| bytemuck::pod_collect_to_vec::<u8, u64>(&view))
                    .map_err(|e| e.to_string());
                self.readback.unmap();
                ticks
            }
            (w, r) => Err(format!("{w:?} {r:?}")),
        };
        match read {
            Ok(ticks) => {
                let mut last_end = None;
                for (name, pair) in self.pending.drain(..).zip(ticks.chunks_exact(2)) {
                    if let Some(end) = last_end {
                        self.gaps_ns += pair[0].saturating_sub(end) as f64 * self.period_ns;
                    }
                    last_end = Some(pair[1]);
                    let ns = pair[1].saturating_sub(pair[0]) as f64 * self.period_ns;
                    let row = self.totals.entry(name).or_insert((0, 0.0));
                    row.0 += 1;
                    row.1 += ns;
                }
            }
            Err(e) => {
                self.failure.get_or_insert(e);
                self.pending.clear();
            }
        }
    }

    /// WebAssembly cannot wait for the GPU; `start_profiling` refuses there.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn collect(&mut self, _device: &wgpu::Device) {
        self.pending.clear();
    }

    pub(crate) fn into_profile(self) -> Result<Profile, Error> {
        if let Some(f) = self.failure {
            return Err(Error::Map(format!("reading the profile's timestamps: {f}")));
        }
        let mut kernels: Vec<KernelTime> = self
            .totals
            .into_iter()
            .map(|(kernel, (launches, gpu_ns))| KernelTime {
                kernel,
                launches,
                gpu_ns,
            })
            .collect();
        kernels.sort_by(|a, b| b.gpu_ns.total_cmp(&a.gpu_ns));
        Ok(Profile {
            kernels,
            gaps_ns: self.gaps_ns,
        })
    }
}
