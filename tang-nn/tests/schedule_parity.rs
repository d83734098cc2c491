//! nanoGPT's warmup-cosine learning rate, as PyTorch's fixture recorded it, against
//! `Schedule::warmup_cosine`.

use tang_nn::schedule::Schedule;

const KEYS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/fixtures/torch/keys.json"
);

/// How many f32 steps apart two values are once rounded to f32.
fn f32_ulps(a: f64, b: f64) -> u32 {
    let (a, b) = ((a as f32).to_bits(), (b as f32).to_bits());
    a.abs_diff(b)
}

#[test]
fn warmup_cosine_matches_nanogpt_get_lr_within_one_f32_ulp() {
    let text = std::fs::read_to_string(KEYS)
        .expect("../shared/fixtures/torch/keys.json beside the checkout");
    let keys: serde_json::Value = serde_json::from_str(&text).unwrap();
    let want: Vec<f64> = serde_json::from_value(keys["nanogpt_get_lr_0_6000"].clone()).unwrap();
    // make_fixtures.py: get_lr(it, lr=1e-3, min_lr=1e-4, warmup=100, decay=5000) at 0, 7, ...
    let schedule = Schedule::warmup_cosine(1e-3, 1e-4, 100, 5000).unwrap();
    assert_eq!(want.len(), 858);
    let (mut worst_ulps, mut worst_abs) = (0, 0.0f64);
    for (i, &w) in want.iter().enumerate() {
        let got = schedule.lr(7 * i as u64);
        worst_ulps = worst_ulps.max(f32_ulps(got, w));
        worst_abs = worst_abs.max((got - w).abs());
    }
    println!(
        "{} steps: worst {worst_ulps} f32 ulp, worst |diff| {worst_abs:e}",
        want.len()
    );
    assert!(worst_ulps <= 1, "{worst_ulps} f32 ulps apart");
}
