//! The peak FLOP/s of known adapters, for model FLOPs utilisation.
//!
//! tang trains in fp32 on the GPU's FMA units (not its tensor cores), so the peak that
//! utilisation is a share of is the vendor's dense fp32 figure: what the adapter could
//! do if every FMA unit worked every cycle at its boost clock. nanoGPT reports MFU
//! against an A100's bf16 tensor-core peak; the fp32 peak is the honest denominator for
//! fp32 training.

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
    if info.is_software {
        return None;
    }
    let name = info.name.to_lowercase();
    // Word-ish matching: "l4" must not match "l40s", which comes first, nor "gl4".
    FP32_PEAKS
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
    use super::FP32_PEAKS;

    #[test]
    fn more_specific_names_come_first() {
        for (i, (key, _)) in FP32_PEAKS.iter().enumerate() {
            for (later, _) in &FP32_PEAKS[i + 1..] {
                assert!(!later.contains(key), "{later} is shadowed by {key}");
            }
        }
    }
}
