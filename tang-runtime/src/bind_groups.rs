//! A cache of bind groups, keyed by the layout and the buffer ranges (buffer, offset and
//! bound size) a launch binds.
//!
//! Creating a bind group is the largest single host cost of a launch: wgpu validates
//! every entry, tracks every buffer and allocates and writes a descriptor set, about a
//! third of the host's time per launch in a training step. A training step binds the
//! same pool buffers to the same kernels step after step (the pool hands a tensor of a
//! given size the buffer the previous step's tensor of that size returned), so from the
//! second step on nearly every launch finds its group here.
//!
//! Uniforms do not break the reuse: they live in the device's one arena buffer, bound
//! with a dynamic offset, so only their padded size is part of the key.
//!
//! An entry keeps its buffers' handles alive, not their memory: the pool frees a
//! buffer's memory with `destroy` when it evicts it, whatever still refers to it, and a
//! destroyed buffer is never bound again (no tensor holds it), so its entries are never
//! hit again and go at the next clear. The cache is cleared whole when it reaches
//! [`CAPACITY`] entries: a program that cycles through more distinct groups than that
//! pays one hash per launch on top of the creation it would pay anyway.

use std::hash::{Hash, Hasher};

use crate::hash::{MixHasher, MixMap};

/// Entries kept before the cache is cleared: several training steps' worth of launches.
const CAPACITY: usize = 8192;

/// One cached group and what it binds, to tell apart keys whose hashes collide (the later
/// one replaces the earlier: a cache may forget).
struct Entry {
    layout: wgpu::BindGroupLayout,
    buffers: Vec<(wgpu::Buffer, u64, u64)>,
    group: wgpu::BindGroup,
}

/// Bind groups by the hash of `(layout, [(buffer, offset, bound bytes)])`.
#[derive(Default)]
pub struct BindGroups {
    entries: MixMap<u64, Entry>,
    /// Groups created (cache misses), for [`crate::Stats::bind_groups_created`].
    pub created: u64,
}

impl BindGroups {
    /// The bind group of `layout` whose binding `i` is the `bound[i].2` bytes of buffer
    /// `bound[i].0` from byte `bound[i].1` (uniform bindings: the arena, dynamic offset),
    /// created on a miss.
    pub fn get(
        &mut self,
        device: &wgpu::Device,
        label: &str,
        layout: &wgpu::BindGroupLayout,
        bound: &[(&wgpu::Buffer, u64, u64)],
    ) -> wgpu::BindGroup {
        let mut h = MixHasher::default();
        layout.hash(&mut h);
        for (buffer, offset, bytes) in bound {
            buffer.hash(&mut h);
            offset.hash(&mut h);
            bytes.hash(&mut h);
        }
        let hash = h.finish();
        let same = |e: &Entry| {
            e.layout == *layout
                && e.buffers.len() == bound.len()
                && e.buffers
                    .iter()
                    .zip(bound)
                    .all(|((b, o, n), (c, p, m))| b == *c && o == p && n == m)
        };
        if let Some(e) = self.entries.get(&hash).filter(|e| same(e)) {
            return e.group.clone();
        }
        if self.entries.len() >= CAPACITY {
            self.entries.clear();
        }
        let entries: Vec<wgpu::BindGroupEntry<'_>> = bound
            .iter()
            .enumerate()
            .map(|(i, (buffer, offset, bytes))| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: *offset,
                    size: wgpu::BufferSize::new(*bytes),
                }),
            })
            .collect();
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout,
            entries: &entries,
        });
        self.created += 1;
        self.entries.insert(
            hash,
            Entry {
                layout: layout.clone(),
                buffers: bound
                    .iter()
                    .map(|(b, o, n)| ((*b).clone(), *o, *n))
                    .collect(),
                group: group.clone(),
            },
        );
        group
    }
}
