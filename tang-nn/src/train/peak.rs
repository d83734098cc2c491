//! The peak FLOP/s of known adapters, for model FLOPs utilisation.
//!
//! fp32 training runs on the GPU's FMA units, so the peak its utilisation is a share of
//! is the vendor's dense fp32 figure: what the adapter could do if every FMA unit worked
//! every cycle at its boost clock. Mixed precision runs the products on the tensor cores
//! where the device has them, so there the denominator is the dense fp16 tensor-core
//! figure (nanoGPT reports MFU against an A100's bf16 tensor-core peak).

use tang_runtime::DeviceInfo;

/// Dense fp32 peaks (FLOP/s), by a lowercase substring of the adapter's name. More
/// specific names come before the names they contain ("h100 pcie" before "h100").
const FP32_PEAKS: &[(&str, f64)] = &[
    ("gh200", 66.9e12),
    ("h200", 66.9e12),
    ("h100 pcie", 51.2e12),
    ("h100", 66.9e12),
    ("a100", 19.5e12),
    ("l40s", 91.6e12),
    ("l4", 30.3e12),
    ("a10g", 31.2e12),
    ("rtx 4090", 82.6e12),
    ("rtx 3090", 35.6e12),
    ("v100", 15.7e12),
    ("t4", 8.1e12),
];

/// Dense fp16 tensor-core peaks with f32 accumulation (FLOP/s), for the data-centre GPUs
/// whose figure NVIDIA publishes, as [`FP32_PEAKS`].
const F16_TENSOR_PEAKS: &[(&str, f64)] = &[
    ("gh200", 989.4e12),
    ("h200", 989.4e12),
    ("h100 pcie", 756.0e12),
    ("h100", 989.4e12),
    ("a100", 312.0e12),
    ("v100", 125.0e12),
];

/// The peak FLOP/s the training's utilisation is a share of: with `mixed_precision` on a
/// device whose products run on the tensor cores ([`DeviceInfo::tensor_cores`]), the
/// fp16 tensor-core peak (`None` for an adapter without a published one); otherwise
/// [`peak_flops`].
pub fn training_peak_flops(info: &DeviceInfo, mixed_precision: bool) -> Option<f64> {
    if mixed_precision && info.tensor_cores {
        lookup(F16_TENSOR_PEAKS, info)
    } else {
        peak_flops(info)
    }
}

/// The adapter's peak fp32 FLOP/s, when it is in tang's table (NVIDIA's data-centre
/// GPUs of the last generations and a few desktop ones); `None` otherwise, and for
/// software adapters. Give [`super::TrainerOptions::peak_flops`] for any other.
///
/// ```
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// // `None` on a software adapter: a utilisation figure means nothing there.
/// let peak = tang_nn::train::peak_flops(dev.info());
/// assert!(peak.is_none_or(|p| p > 1e12));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn peak_flops(info: &DeviceInfo) -> Option<f64> {
    lookup(FP32_PEAKS, info)
}

/// The peak of `info`'s adapter in `table` (software adapters: `None`).
fn lookup(table: &[(&str, f64)], info: &DeviceInfo) -> Option<f64> {
    if info.is_software {
        return None;
    }
    let name = info.name.to_lowercase();
    // Word-ish matching: "l4" must not match "l40s", which comes first, nor "gl4".
    table
        .iter()
        .find(|(key, _)| {
            name.match_indices(key).any(|(at, _)| {
                let before = name[..at].chars().next_back();
                let after = name[at + key.len()..].chars().next();
                !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric)
            })
        })
        .map(|&(_, peak)| peak)
}

#[cfg(test)]
mod tests {
    use super::{F16_TENSOR_PEAKS, FP32_PEAKS, training_peak_flops};

    /// Mixed precision is a share of the tensor-core peak only where the products run on
    /// the tensor cores.
    #[test]
    fn mixed_precision_on_tensor_cores_takes_the_f16_peak() {
        let dev = tang_runtime::Device::new().expect("a device");
        let mut info = dev.info().clone();
        info.is_software = false;
        info.name = "NVIDIA H200".into();
        info.tensor_cores = true;
        assert_eq!(training_peak_flops(&info, true), Some(989.4e12));
        assert_eq!(training_peak_flops(&info, false), Some(66.9e12));
        info.tensor_cores = false;
        assert_eq!(training_peak_flops(&info, true), Some(66.9e12));
        info.name = "NVIDIA L4".into();
        info.tensor_cores = true;
        assert_eq!(training_peak_flops(&info, true), None);
    }

    #[test]
    fn more_specific_names_come_first() {
        for table in [FP32_PEAKS, F16_TENSOR_PEAKS] {
            for (i, (key, _)) in table.iter().enumerate() {
                for (later, _) in &table[i + 1..] {
                    assert!(!later.contains(key), "{later} is shadowed by {key}");
                }
            }
        }
    }
}
