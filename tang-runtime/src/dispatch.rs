//! Recording one dispatch: its bindings ([`Binding`]), binding checks, uniforms into the arena, pipeline from the
//! cache, bind group, and the dispatch in the shared compute pass.

use std::sync::atomic::Ordering;

use crate::device::Device;
use crate::error::Error;
use crate::pipeline::{Kind, PipelineKey, RawKernel};
use crate::tensor::Tensor;

/// One binding of a dispatch: binding `i` of group 0 is `bindings[i]`.
#[derive(Clone, Copy, Debug)]
pub enum Binding<'a> {
    /// `var<uniform>`: the bytes are copied into the uniform arena (padded to 16 bytes).
    Uniform(&'a [u8]),
    /// `var<storage, read>`.
    Read(&'a Tensor),
    /// `var<storage, read_write>`.
    ReadWrite(&'a Tensor),
}

impl Binding<'_> {
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Binding::Uniform(_) => Kind::Uniform,
            Binding::Read(_) => Kind::Read,
            Binding::ReadWrite(_) => Kind::ReadWrite,
        }
    }
}

/// Bytes a tensor binding covers: its data rounded up to whole 16-byte `vec4`s, at least
/// one (wgpu rejects empty bindings, and kernels that read `array<vec4<f32>>` need the
/// last partial vec4 inside the binding). Pool buffers are allocated in size classes of at
/// least 256 bytes, and every class is a multiple of 16, so the rounded range is always
/// inside the buffer.
fn binding_size(bytes: u64) -> u64 {
    bytes.div_ceil(16).max(1) * 16
}

impl Device {
    /// Checks a binding list against the device's limits and for aliasing.
    pub(crate) fn check_bindings(&self, op: &str, bindings: &[Binding<'_>]) -> Result<(), Error> {
        let limits = &self.inner.info.limits;
        let mut storage = 0u32;
        let mut uniform = 0u32;
        for (i, b) in bindings.iter().enumerate() {
            match b {
                Binding::Uniform(bytes) => {
                    uniform += 1;
                    let max = limits.max_uniform_buffer_binding_size;
                    if bytes.len() as u64 > max {
                        return Err(Error::TooLarge {
                            what: format!("{op}: uniform binding {i} (bytes)"),
                            requested: bytes.len() as u64,
                            limit: max,
                        });
                    }
                }
                Binding::Read(t) | Binding::ReadWrite(t) => {
                    storage += 1;
                    // `format_args!` formats the binding's name only on the error path.
                    t.expect_device(op, format_args!("binding {i}"), self)?;
                    let max = limits.max_storage_buffer_binding_size;
                    if t.bytes() > max {
                        return Err(Error::TooLarge {
                            what: format!("{op}: storage binding {i} (bytes)"),
                            requested: t.bytes(),
                            limit: max,
                        });
                    }
                    if let Binding::ReadWrite(_) = b {
                        for (j, other) in bindings.iter().enumerate() {
                            // wgpu refuses one buffer bound for reading and for
                            // writing in a launch, even as disjoint views; two written
                            // views of one buffer are fine when they do not overlap.
                            let clash = match other {
                                Binding::Read(o) => o.same_buffer(t),
                                Binding::ReadWrite(o) => o.overlaps(t),
                                Binding::Uniform(_) => false,
                            };
                            if j != i && clash {
                                return Err(Error::Aliasing {
                                    op: op.into(),
                                    detail: format!(
                                        "bindings {i} (written) and {j} are the same tensor"
                                    ),
                                });
                            }
                        }
                    }
                }
            }
        }
        let max_storage = limits.max_storage_buffers_per_shader_stage;
        if storage > max_storage {
            return Err(Error::TooLarge {
                what: format!("{op}: storage buffers in one kernel"),
                requested: storage.into(),
                limit: max_storage.into(),
            });
        }
        let max_uniform = limits
            .max_dynamic_uniform_buffers_per_pipeline_layout
            .min(limits.max_uniform_buffers_per_shader_stage);
        if uniform > max_uniform {
            return Err(Error::TooLarge {
                what: format!("{op}: uniform buffers in one kernel"),
                requested: uniform.into(),
                limit: max_uniform.into(),
            });
        }
        Ok(())
    }

    /// Records a dispatch of any hand-written kernel: binding `i` of group 0 is
    /// `bindings[i]`; `constants` set WGSL `override` values (part of the pipeline key).
    /// The work runs at the next sync point (a read, [`Device::sync`], or a full batch).
    ///
    /// # Errors
    /// [`Error::TooLarge`] over a device limit (binding sizes, buffer counts, workgroups),
    /// [`Error::Aliasing`] when a written tensor is bound twice, [`Error::DeviceLost`].
    pub fn dispatch_raw(
        &self,
        kernel: &RawKernel,
        constants: &[(&str, f64)],
        bindings: &[Binding<'_>],
        workgroups: [u32; 3],
    ) -> Result<(), Error> {
        self.check_bindings(kernel.name(), bindings)?;
        let max = self.inner.info.limits.max_compute_workgroups_per_dimension;
        if let Some(&w) = workgroups.iter().find(|&&w| w > max) {
            return Err(Error::TooLarge {
                what: format!("{}: workgroups in one dimension", kernel.name()),
                requested: w.into(),
                limit: max.into(),
            });
        }
        let key = PipelineKey {
            id: kernel.id(),
            trusted: kernel.is_trusted(),
            entry_point: kernel.entry_point(),
            constants: constants.iter().map(|(k, v)| (*k, v.to_bits())).collect(),
            kinds: bindings.iter().map(Binding::kind).collect(),
        };
        self.record(key, kernel.name(), kernel.wgsl(), bindings, workgroups)
    }

    /// Records a dispatch whose bindings were already checked.
    pub(crate) fn record(
        &self,
        key: PipelineKey<'_>,
        name: &str,
        wgsl: &str,
        bindings: &[Binding<'_>],
        workgroups: [u32; 3],
    ) -> Result<(), Error> {
        let inner = &*self.inner;
        let mut st = self.lock()?;
        let uniform_sizes = bindings.iter().filter_map(|b| match b {
            Binding::Uniform(u) => Some(u.len()),
            _ => None,
        });
        if !st.has_room_for_launch(uniform_sizes) {
            st.submit(inner);
        }
        let arena = st.arena_buf.clone();
        // Dynamic offsets and padded sizes of the uniforms, in binding order: lists kept
        // in the state and reused by every launch (taken out while the state is borrowed
        // for the pass; an error path simply drops them).
        let mut offsets = std::mem::take(&mut st.uniform_offsets);
        let mut sizes = std::mem::take(&mut st.uniform_sizes);
        offsets.clear();
        sizes.clear();
        for b in bindings {
            if let Binding::Uniform(bytes) = b {
                let Some((offset, size)) = st.push_uniform(bytes) else {
                    return Err(Error::TooLarge {
                        what: format!("{name}: uniform bytes in one launch"),
                        requested: bytes.len() as u64,
                        limit: 1 << 20,
                    });
                };
                offsets.push(offset);
                sizes.push(size);
            }
        }
        let (pipeline, layout) =
            st.cache
                .get(&inner.device, inner.info.checked, &key, name, wgsl)?;
        let mut uniform_sizes = sizes.iter().copied();
        let bound: Vec<(&wgpu::Buffer, u64, u64)> = bindings
            .iter()
            .map(|b| match b {
                Binding::Uniform(_) => (&arena, 0, uniform_sizes.next().unwrap_or(16)),
                Binding::Read(t) | Binding::ReadWrite(t) => {
                    (t.buffer(), t.byte_offset(), binding_size(t.bytes()))
                }
            })
            .collect();
        let group = st.bind_groups.get(&inner.device, name, &layout, &bound);
        st.dispatch(inner, name, &pipeline, &group, &offsets, workgroups);
        let batch = st.batch;
        st.uniform_offsets = offsets;
        st.uniform_sizes = sizes;
        for b in bindings {
            if let Binding::Read(t) | Binding::ReadWrite(t) = b {
                t.storage.last_batch.store(batch, Ordering::Relaxed);
            }
            // What was known of the values no longer holds once a kernel writes them.
            if let Binding::ReadWrite(t) = b {
                t.storage
                    .id_max
                    .store(crate::tensor::UNKNOWN_MAX, Ordering::Relaxed);
            }
        }
        st.recorded_dispatch(inner);
        drop(st);
        self.check()
    }
}
