//! The CPU side of the page's checks, in f64, and the tally the page shows.
//!
//! Every GPU result in the page is compared with one of these functions run on the same
//! inputs inside the page's WebAssembly, so a check fails when WebGPU computes something
//! else than the code that runs natively.

use std::fmt;

/// `a [m, k] · b [k, n]`, accumulated in f64.
pub fn matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k)
                .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                .sum();
        }
    }
    out
}

/// Softmax over each row of `x [rows, cols]` (rows of `cols` values), in f64.
pub fn softmax_rows(x: &[f32], cols: usize) -> Vec<f64> {
    x.chunks(cols.max(1))
        .flat_map(|row| {
            let max = row
                .iter()
                .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
            let exps: Vec<f64> = row.iter().map(|&v| (f64::from(v) - max).exp()).collect();
            let sum: f64 = exps.iter().sum();
            exps.into_iter().map(move |e| e / sum)
        })
        .collect()
}

/// `x [rows, inputs] · wᵀ + b` for a PyTorch-layout weight `w [outputs, inputs]`.
pub fn linear(x: &[f32], w: &[f32], b: &[f32], inputs: usize, outputs: usize) -> Vec<f64> {
    x.chunks(inputs.max(1))
        .flat_map(|row| {
            (0..outputs).map(move |o| {
                let dot: f64 = row
                    .iter()
                    .zip(&w[o * inputs..(o + 1) * inputs])
                    .map(|(&xi, &wi)| f64::from(xi) * f64::from(wi))
                    .sum();
                dot + f64::from(b[o])
            })
        })
        .collect()
}

/// The mean cross-entropy of `logits [rows, classes]` against class indices `labels`,
/// in f64 (PyTorch's `F.cross_entropy` with its default mean reduction).
pub fn cross_entropy(logits: &[f64], labels: &[u32], classes: usize) -> f64 {
    let rows = labels.len();
    if rows == 0 {
        return f64::NAN;
    }
    let total: f64 = logits
        .chunks(classes.max(1))
        .zip(labels)
        .map(|(row, &label)| {
            let max = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
            let log_sum = row.iter().map(|&v| (v - max).exp()).sum::<f64>().ln() + max;
            log_sum - row[label as usize]
        })
        .sum();
    total / rows as f64
}

/// The digits MLP's forward pass on the CPU (`Linear`, `ReLU`, `Linear`) for parameters
/// read back from the GPU, in the order of `named_parameters`: `0.weight`, `0.bias`,
/// `2.weight`, `2.bias`. Returns the logits `[rows, classes]`.
pub fn mlp_logits(x: &[f32], params: &[Vec<f32>; 4], inputs: usize) -> Vec<f64> {
    let [w1, b1, w2, b2] = params;
    let hidden = b1.len();
    let h: Vec<f32> = linear(x, w1, b1, inputs, hidden)
        .into_iter()
        .map(|v| v.max(0.0) as f32)
        .collect();
    linear(&h, w2, b2, hidden, b2.len())
}

/// The largest `|got - want|` and whether every element is within
/// `atol + rtol * |want|` (see [`tang_testing::close`]); lengths that differ fail.
pub fn compare(got: &[f32], want: &[f64], atol: f64, rtol: f64) -> (f64, bool) {
    if got.len() != want.len() {
        return (f64::INFINITY, false);
    }
    let mut worst = 0.0f64;
    let mut ok = true;
    for (&g, &w) in got.iter().zip(want) {
        let g = f64::from(g);
        worst = worst.max((g - w).abs());
        ok &= tang_testing::close(g, w, atol, rtol);
    }
    (worst, ok)
}

/// One named check with what it measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// The figures behind the verdict (largest difference, losses).
    pub detail: String,
}

/// The checks of one run, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Every check so far.
    pub checks: Vec<Check>,
}

impl Report {
    /// Records a check.
    pub fn push(&mut self, name: impl Into<String>, passed: bool, detail: impl Into<String>) {
        self.checks.push(Check {
            name: name.into(),
            passed,
            detail: detail.into(),
        });
    }

    /// How many checks passed.
    pub fn passed(&self) -> usize {
        self.checks.iter().filter(|c| c.passed).count()
    }

    /// How many checks failed.
    pub fn failed(&self) -> usize {
        self.checks.len() - self.passed()
    }
}

/// "n passed, m failed": the line the test script reads from the page.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} passed, {} failed", self.passed(), self.failed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_and_linear_agree_on_a_small_case() {
        // [[1, 2], [3, 4]] · [[5, 6], [7, 8]]
        let got = matmul(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], 2, 2, 2);
        assert_eq!(got, vec![19.0, 22.0, 43.0, 50.0]);
        // x · wᵀ + b with w = bᵀ of the matmul above: the same product plus the bias.
        let got = linear(
            &[1.0, 2.0, 3.0, 4.0],
            &[5.0, 7.0, 6.0, 8.0],
            &[1.0, -1.0],
            2,
            2,
        );
        assert_eq!(got, vec![20.0, 21.0, 44.0, 49.0]);
    }

    #[test]
    fn softmax_rows_sum_to_one_and_resist_overflow() {
        let y = softmax_rows(&[1000.0, 1000.0, 0.0, 1.0, 2.0, 3.0], 3);
        assert!((y[0] - 0.5).abs() < 1e-12 && y[2] < 1e-300);
        let row: f64 = y[3..].iter().sum();
        assert!((row - 1.0).abs() < 1e-12);
        assert!(y[5] > y[4] && y[4] > y[3]);
    }

    #[test]
    fn cross_entropy_of_uniform_logits_is_log_classes() {
        let ce = cross_entropy(&[0.0; 20], &[3, 7], 10);
        assert!((ce - 10f64.ln()).abs() < 1e-12);
        assert!(cross_entropy(&[], &[], 10).is_nan());
    }

    #[test]
    fn mlp_logits_apply_relu_between_the_layers() {
        // One input, one hidden unit with weight -1 (ReLU zeroes it), bias 0.5 on the output.
        let params = [vec![-1.0], vec![0.0], vec![2.0], vec![0.5]];
        assert_eq!(mlp_logits(&[3.0], &params, 1), vec![0.5]);
        assert_eq!(mlp_logits(&[-3.0], &params, 1), vec![6.5]);
    }

    #[test]
    fn compare_reports_the_worst_difference_and_fails_on_length() {
        let (worst, ok) = compare(&[1.0, 2.5], &[1.0, 2.0], 1e-6, 0.0);
        assert_eq!((worst, ok), (0.5, false));
        assert!(compare(&[1.0, 2.0], &[1.0, 2.0], 0.0, 0.0).1);
        assert!(!compare(&[1.0], &[1.0, 2.0], 1.0, 1.0).1);
    }

    #[test]
    fn report_counts_and_prints_the_summary() {
        let mut r = Report::default();
        r.push("a", true, "");
        r.push("b", false, "");
        r.push("c", true, "");
        assert_eq!(r.to_string(), "2 passed, 1 failed");
    }
}
