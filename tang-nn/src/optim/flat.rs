//! The multi-tensor step: a group's parameters updated in one launch over flat tensors,
//! instead of one launch per parameter (a GPT of 6 blocks has 77 parameters, most of them
//! small, and each launch costs the host a few microseconds and the GPU a barrier).
//!
//! The group's state buffers live in flat tensors whose aligned segments are the
//! parameters' buffers (views, so `state_dict`, loading and [`super::ParamState::buffer`]
//! see them as before). Each step packs the gradients and the parameters into flat
//! tensors ([`tang_runtime::ops::pack`]: one launch per 64 parameters), runs the
//! algorithm's kernel once over them ([`Algorithm::update_flat`]) and unpacks the
//! parameters. The arithmetic per element is the per-parameter kernel's, so trajectories
//! are the same to the bit.
//!
//! It applies to a group when the algorithm has a flat form (Adam and AdamW without
//! AMSGrad), at least two parameters have gradients and every one of them is at the same
//! step; otherwise the parameters are updated one by one.

use tang_runtime::{DType, Device, Tensor, ops};

use super::algorithm::Algorithm;
use super::error::OptimError;
use super::param::Param;

/// A group's flat state: which parameters, where each one's segment starts, and one flat
/// tensor per state buffer of [`Algorithm::flat_buffers`].
#[derive(Debug)]
pub(crate) struct FlatGroup {
    ids: Vec<usize>,
    offsets: Vec<usize>,
    total: usize,
    buffers: Vec<Tensor>,
}

impl FlatGroup {
    /// Lays out the parameters `ids` (segments on the device's view alignment), creates
    /// the flat buffers (zeros, then the parameters' existing buffers packed in) and makes
    /// every parameter's buffers views of them.
    fn build(
        keys: &'static [&'static str],
        params: &mut [Param],
        ids: &[usize],
        dev: &Device,
    ) -> Result<FlatGroup, OptimError> {
        let align = (dev.info().limits.min_storage_buffer_offset_alignment as usize / 4).max(1);
        let mut offsets = Vec::with_capacity(ids.len());
        let mut total = 0usize;
        for &i in ids {
            total = total.next_multiple_of(align);
            offsets.push(total);
            total += params[i].tensor.len();
        }
        let mut buffers = Vec::with_capacity(keys.len());
        for key in keys {
            let flat = Tensor::zeros(dev, &[total])?;
            let (mut held, mut at) = (Vec::new(), Vec::new());
            for (&i, &offset) in ids.iter().zip(&offsets) {
                if let Some(b) = params[i].state.buffers.get(key) {
                    held.push(b.clone());
                    at.push(offset);
                }
            }
            let held_refs: Vec<&Tensor> = held.iter().collect();
            ops::pack(&held_refs, &flat, &at)?;
            for (&i, &offset) in ids.iter().zip(&offsets) {
                let shape = params[i].tensor.shape().to_vec();
                let view = flat.view_at(offset, &shape).ok_or_else(|| {
                    OptimError::Runtime(tang_runtime::Error::TooLarge {
                        what: format!("flat optimizer state: a view at element {offset}"),
                        requested: (offset * 4) as u64,
                        limit: flat.bytes(),
                    })
                })?;
                params[i].state.buffers.insert(key, view);
            }
            buffers.push(flat);
        }
        Ok(FlatGroup {
            ids: ids.to_vec(),
            offsets,
            total,
            buffers,
        })
    }

    /// Whether every parameter of `ids` still holds its views of these buffers (loading a
    /// state replaces them, and the next step lays the group out again).
    fn holds(&self, keys: &[&str], params: &[Param], ids: &[usize]) -> bool {
        self.ids == ids
            && keys.iter().zip(&self.buffers).all(|(key, flat)| {
                self.ids.iter().zip(&self.offsets).all(|(&i, &offset)| {
                    params[i].state.buffers.get(key).is_some_and(|b| {
                        b.same_buffer(flat)
                            && b.byte_offset() == flat.byte_offset() + (offset * 4) as u64
                            && b.len() == params[i].tensor.len()
                    })
                })
            })
    }
}

/// Updates the parameters of one group, `items` (parameter index, gradient), in one
/// kernel launch over flat tensors, when the multi-tensor step applies; `Ok(false)` when
/// it does not (the caller updates them one by one).
pub(crate) fn step_group<A: Algorithm>(
    options: &A,
    params: &mut [Param],
    items: &[(usize, &Tensor)],
    cache: &mut Option<FlatGroup>,
    clip_coef: &Tensor,
    dev: &Device,
) -> Result<bool, OptimError> {
    let keys = options.flat_buffers();
    let Some(&(first, _)) = items.first() else {
        return Ok(false);
    };
    let step = params[first].state.step;
    let applies = !keys.is_empty()
        && items.len() >= 2
        && items
            .iter()
            .all(|&(i, _)| params[i].state.step == step && params[i].tensor.dtype() == DType::F32);
    if !applies {
        return Ok(false);
    }
    let ids: Vec<usize> = items.iter().map(|&(i, _)| i).collect();
    if !cache.as_ref().is_some_and(|c| c.holds(keys, params, &ids)) {
        *cache = Some(FlatGroup::build(keys, params, &ids, dev)?);
    }
    let Some(flat) = cache.as_ref() else {
        return Ok(false);
    };
    let param_parts: Vec<&Tensor> = ids.iter().map(|&i| &params[i].tensor).collect();
    let grad_parts: Vec<&Tensor> = items.iter().map(|&(_, g)| g).collect();
    let p = dev.empty(&[flat.total], DType::F32)?;
    let g = dev.empty(&[flat.total], DType::F32)?;
    ops::pack(&param_parts, &p, &flat.offsets)?;
    ops::pack(&grad_parts, &g, &flat.offsets)?;
    let buffers: Vec<&Tensor> = flat.buffers.iter().collect();
    let next = step.saturating_add(1);
    options.update_flat(&p, &g, clip_coef, &buffers, next)?;
    ops::unpack(&p, &flat.offsets, &param_parts)?;
    for &i in &ids {
        params[i].state.step = next;
    }
    Ok(true)
}
