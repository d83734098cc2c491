//! Kernels as the runtime sees them ([`RawKernel`], [`Binding`]) and the pipeline cache.
//!
//! A pipeline is keyed by the kernel's static id, its entry point, its override constants
//! and the kinds of its bindings, so a second launch of the same kernel creates neither a
//! shader module nor a pipeline. Bind group layouts are explicit: binding `i` of group 0
//! is `bindings[i]`; uniforms are bound with a dynamic offset into the uniform arena.

use std::collections::HashMap;

use crate::error::Error;
use crate::tensor::Tensor;

/// A hand-written compute shader: what the dense kernels pass to
/// [`Device::dispatch_raw`](crate::Device::dispatch_raw).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawKernel {
    /// A name for labels and error messages.
    pub name: &'static str,
    /// The WGSL source.
    pub wgsl: &'static str,
    /// The compute entry point.
    pub entry_point: &'static str,
    /// A stable id (the pipeline cache key): [`RawKernel::new`] hashes the source.
    pub id: u64,
}

impl RawKernel {
    /// A kernel whose id is the FNV-1a hash of its source and entry point (a `const fn`:
    /// `const K: RawKernel = RawKernel::new("sum", WGSL, "main");`).
    pub const fn new(name: &'static str, wgsl: &'static str, entry_point: &'static str) -> Self {
        let id = tang_expr::stable_hash(wgsl) ^ tang_expr::stable_hash(entry_point).rotate_left(17);
        RawKernel {
            name,
            wgsl,
            entry_point,
            id,
        }
    }
}

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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Uniform,
    Read,
    ReadWrite,
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

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PipelineKey {
    pub id: u64,
    pub entry_point: &'static str,
    pub constants: Vec<(String, u64)>,
    pub kinds: Vec<Kind>,
}

pub(crate) struct Pipeline {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
}

/// Shader modules (by kernel id) and pipelines (by [`PipelineKey`]).
#[derive(Default)]
pub(crate) struct Cache {
    modules: HashMap<u64, wgpu::ShaderModule>,
    pipelines: HashMap<PipelineKey, Pipeline>,
    pub modules_created: u64,
    pub pipelines_created: u64,
}

/// Creates a shader module for a tang kernel.
///
/// Unchecked unless `checked`: wgpu's runtime bounds checks cost up to 60x on tiled
/// kernels (see DESIGN.md).
#[allow(unsafe_code)]
fn create_module(
    device: &wgpu::Device,
    label: &str,
    wgsl: &str,
    checked: bool,
) -> wgpu::ShaderModule {
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(wgsl.into()),
    };
    let checks = if checked {
        wgpu::ShaderRuntimeChecks::checked()
    } else {
        wgpu::ShaderRuntimeChecks::unchecked()
    };
    // SAFETY: every kernel tang launches is naga-validated WGSL that guards each array
    // index by the length it was given (elementwise kernels by `i < params.n`, dense
    // kernels by their shape uniforms, which the runtime checks against the bound
    // tensors), so no access goes out of bounds without wgpu's inserted checks.
    unsafe { device.create_shader_module_trusted(desc, checks) }
}

impl Cache {
    /// The pipeline for `key`, created (with its module) on first use.
    pub fn get(
        &mut self,
        device: &wgpu::Device,
        checked: bool,
        key: PipelineKey,
        name: &str,
        wgsl: &str,
    ) -> Result<&Pipeline, Error> {
        if !self.pipelines.contains_key(&key) {
            // Creation errors (bad WGSL, a layout the shader disagrees with) are caught
            // here, so a broken kernel is an error of its launch and never poisons the
            // batch it would have been recorded into.
            let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
            let module = match self.modules.get(&key.id) {
                Some(m) => m.clone(),
                None => {
                    self.modules_created += 1;
                    create_module(device, name, wgsl, checked)
                }
            };
            let module = &module;
            let entries: Vec<wgpu::BindGroupLayoutEntry> = key
                .kinds
                .iter()
                .enumerate()
                .map(|(i, k)| wgpu::BindGroupLayoutEntry {
                    binding: i as u32,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: match k {
                        Kind::Uniform => wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Uniform,
                            has_dynamic_offset: true,
                            min_binding_size: None,
                        },
                        Kind::Read => wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Storage { read_only: true },
                            has_dynamic_offset: false,
                            min_binding_size: None,
                        },
                        Kind::ReadWrite => wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Storage { read_only: false },
                            has_dynamic_offset: false,
                            min_binding_size: None,
                        },
                    },
                    count: None,
                })
                .collect();
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(name),
                entries: &entries,
            });
            let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(name),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            let constants: Vec<(&str, f64)> = key
                .constants
                .iter()
                .map(|(k, v)| (k.as_str(), f64::from_bits(*v)))
                .collect();
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(name),
                layout: Some(&pl),
                module,
                entry_point: Some(key.entry_point),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &constants,
                    // WGSL promises zeroed workgroup memory; kernels may rely on it.
                    zero_initialize_workgroup_memory: true,
                },
                cache: None,
            });
            self.pipelines_created += 1;
            if let Some(e) = pollster::block_on(scope.pop()) {
                return Err(Error::Wgpu(format!("kernel `{name}`: {e}")));
            }
            self.modules.insert(key.id, module.clone());
            self.pipelines
                .insert(key.clone(), Pipeline { pipeline, layout });
        }
        self.pipelines
            .get(&key)
            .ok_or_else(|| Error::Wgpu(format!("kernel `{name}`: pipeline missing from the cache")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: RawKernel = RawKernel::new("k", "@compute @workgroup_size(1) fn main() {}", "main");

    #[test]
    fn raw_kernel_ids_are_const_and_distinct() {
        let other = RawKernel::new("k", "@compute @workgroup_size(2) fn main() {}", "main");
        assert_ne!(K.id, other.id);
        assert_eq!(K.id, RawKernel::new("x", K.wgsl, "main").id);
        assert_ne!(K.id, RawKernel::new("k", K.wgsl, "other").id);
    }
}
