//! The page's entry point: runs every check on WebGPU, writes each result and the
//! summary into the page, and returns the summary to the page's script.
//!
//! Only the async entry points are used; the blocking ones are called once each to check
//! that they refuse with `Error::Blocking` instead of hanging the page.

use std::error::Error as StdError;

use tang_examples::digits::{CLASSES, Digits, FEATURES};
use tang_nn::Module;
use tang_nn::autograd::Tensor as Var;
use tang_nn::nn::functional::cross_entropy;
use tang_nn::nn::{Linear, ReLU, Sequential};
use tang_nn::optim::{Adam, AdamOptions};
use tang_nn::rng::SplitMix64;
use tang_runtime::ops::matmul;
use tang_runtime::ops::softmax;
use tang_runtime::{Device, Error, Tensor};
use wasm_bindgen::prelude::*;
use web_sys::Document;

use crate::kernel::gated_softplus;
use crate::reference::{self, Report};

/// Any failure of a step that is not itself a check (no adapter, a refused launch).
type Failure = Box<dyn StdError>;

/// Elements of the kernel check: not a multiple of the workgroup size, so the tail of the
/// last workgroup is exercised.
const KERNEL_LEN: usize = 1000;
/// Hidden units of the digits MLP (as `examples/train_digits.rs`).
const HIDDEN: usize = 128;
/// Images per training step.
const BATCH: usize = 64;
/// Training steps shown in the page.
const STEPS: usize = 25;
/// Adam's learning rate: larger than PyTorch's default so that a few steps show the fall.
const LR: f64 = 1e-2;
/// Fixes the inputs, the split, the initial weights and the batches.
const SEED: u64 = 2024;

/// Runs every check, writes them and the summary ("n passed, m failed") into the page
/// (elements `checks`, `losses`, `adapter`, `summary`) and returns the summary.
///
/// # Errors
/// Only when the page lacks the elements it writes to; every other failure is a failed
/// check in the summary.
#[wasm_bindgen]
pub async fn run() -> Result<String, JsValue> {
    crate::panic::install();
    let doc = web_sys::window()
        .and_then(|w| w.document())
        .ok_or_else(|| JsValue::from_str("no document to write the results into"))?;
    let mut report = Report::default();
    if let Err(e) = run_checks(&doc, &mut report).await {
        report.push("the checks ran to the end", false, e.to_string());
    }
    for check in &report.checks {
        let verdict = if check.passed { "PASS" } else { "FAIL" };
        let line = format!("{verdict} {}: {}", check.name, check.detail);
        append(
            &doc,
            "checks",
            "li",
            if check.passed { "pass" } else { "fail" },
            &line,
        )?;
    }
    let summary = report.to_string();
    set_text(&doc, "summary", &summary)?;
    doc.set_title(&format!("tang web: {summary}"));
    Ok(summary)
}

async fn run_checks(doc: &Document, report: &mut Report) -> Result<(), Failure> {
    let refused = matches!(Device::new(), Err(Error::Blocking { .. }));
    report.push(
        "Device::new refuses to block",
        refused,
        "returns Error::Blocking; the page awaits Device::new_async",
    );
    let dev = Device::new_async().await?;
    let info = dev.info();
    let adapter = format!("{} ({:?}, {:?})", info.name, info.backend, info.device_type);
    set_text(doc, "adapter", &adapter).map_err(js_failure)?;

    let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?;
    let refused = matches!(x.to_vec(), Err(Error::Blocking { .. }));
    let read = x.to_vec_async().await?;
    report.push(
        "Tensor::to_vec refuses to block, to_vec_async reads",
        refused && read == [1.0, 2.0],
        format!("to_vec_async gave {read:?}"),
    );

    check_kernel(&dev, report).await?;
    check_matmul(&dev, report).await?;
    check_softmax(&dev, report).await?;
    train_digits(doc, &dev, report).await
}

/// The fused-gradient kernel's value and VJP against its CPU twins.
async fn check_kernel(dev: &Device, report: &mut Report) -> Result<(), Failure> {
    // Inputs in [-2, 2) so both branches of the kink are taken.
    let xs: Vec<f32> = tang_testing::random(KERNEL_LEN, SEED)
        .iter()
        .map(|v| 2.0 * v)
        .collect();
    let ys = tang_testing::random(KERNEL_LEN, SEED + 1);
    let gs = tang_testing::random(KERNEL_LEN, SEED + 2);
    let x = Tensor::from_slice(dev, &xs, &[KERNEL_LEN])?;
    let y = Tensor::from_slice(dev, &ys, &[KERNEL_LEN])?;
    let g = Tensor::from_slice(dev, &gs, &[KERNEL_LEN])?;

    let got = gated_softplus::launch(dev, &x, &y)?.to_vec_async().await?;
    let want: Vec<f64> = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| f64::from(gated_softplus(x, y)))
        .collect();
    let (worst, ok) = reference::compare(&got, &want, 1e-6, 1e-5);
    report.push(
        format!("#[fused_grad] gated_softplus value, {KERNEL_LEN} elements"),
        ok,
        format!("max |GPU - CPU| {worst:.2e}"),
    );

    let [dx, dy] = gated_softplus::launch_vjp(dev, &x, &y, &g)?;
    let (dx, dy) = (dx.to_vec_async().await?, dy.to_vec_async().await?);
    let cpu: Vec<[f32; 2]> = (0..KERNEL_LEN)
        .map(|i| gated_softplus::vjp(xs[i], ys[i], gs[i]))
        .collect();
    let want_dx: Vec<f64> = cpu.iter().map(|v| f64::from(v[0])).collect();
    let want_dy: Vec<f64> = cpu.iter().map(|v| f64::from(v[1])).collect();
    let (worst_x, ok_x) = reference::compare(&dx, &want_dx, 1e-6, 1e-5);
    let (worst_y, ok_y) = reference::compare(&dy, &want_dy, 1e-6, 1e-5);
    report.push(
        "#[fused_grad] gated_softplus VJP (both inputs)",
        ok_x && ok_y,
        format!("max |GPU - CPU| {worst_x:.2e} (x), {worst_y:.2e} (y)"),
    );
    Ok(())
}

/// A matmul of sizes that are not multiples of the tile, against the f64 product.
async fn check_matmul(dev: &Device, report: &mut Report) -> Result<(), Failure> {
    let (m, k, n) = (37, 29, 41);
    let a = tang_testing::random(m * k, SEED + 3);
    let b = tang_testing::random(k * n, SEED + 4);
    let ta = Tensor::from_slice(dev, &a, &[m, k])?;
    let tb = Tensor::from_slice(dev, &b, &[k, n])?;
    let got = matmul(&ta, &tb)?.to_vec_async().await?;
    let (worst, ok) = reference::compare(&got, &reference::matmul(&a, &b, m, k, n), 1e-5, 1e-5);
    report.push(
        format!("ops::matmul [{m}, {k}] x [{k}, {n}]"),
        ok,
        format!("max |GPU - CPU| {worst:.2e}"),
    );
    Ok(())
}

/// Softmax over rows wide enough to take several values per thread, against f64.
async fn check_softmax(dev: &Device, report: &mut Report) -> Result<(), Failure> {
    let (rows, cols) = (13, 70);
    // Spread to [-8, 8) so the row maximum matters.
    let x: Vec<f32> = tang_testing::random(rows * cols, SEED + 5)
        .iter()
        .map(|v| 8.0 * v)
        .collect();
    let t = Tensor::from_slice(dev, &x, &[rows, cols])?;
    let got = softmax(&t)?.to_vec_async().await?;
    let (worst, ok) = reference::compare(&got, &reference::softmax_rows(&x, cols), 1e-6, 1e-5);
    report.push(
        format!("ops::softmax [{rows}, {cols}]"),
        ok,
        format!("max |GPU - CPU| {worst:.2e}"),
    );
    Ok(())
}

/// Trains the digits MLP with tang-nn for [`STEPS`] steps, one loss read per step. Checks
/// the first loss against the CPU forward pass of the same weights, and that the loss
/// falls.
async fn train_digits(doc: &Document, dev: &Device, report: &mut Report) -> Result<(), Failure> {
    let data = Digits::bundled()?;
    let mut rng = SplitMix64::new(SEED);
    let model = Sequential::new()
        .append(Linear::new(dev, FEATURES, HIDDEN, true, &mut rng)?)
        .append(ReLU)
        .append(Linear::new(dev, HIDDEN, CLASSES, true, &mut rng)?);
    let named = model.named_parameters();
    let mut initial: Vec<Vec<f32>> = Vec::with_capacity(named.len());
    for (_, p) in &named {
        initial.push(p.data().to_vec_async().await?);
    }
    let mut opt = Adam::new(model.named_parameters(), AdamOptions::default().lr(LR))?;

    let mut order: Vec<usize> = (0..data.len()).collect();
    rng.shuffle(&mut order);
    let mut losses = Vec::with_capacity(STEPS);
    for (step, batch) in order.chunks_exact(BATCH).take(STEPS).enumerate() {
        let b = data.select(batch);
        let x = Var::from_slice(dev, &b.features, &[b.len(), FEATURES])?;
        let y = Var::from_u32(dev, &b.labels, &[b.len()])?;
        let loss = cross_entropy(&model.forward(&x)?, &y)?;
        let grads = loss.backward()?;
        opt.step(&grads)?;
        // Awaited after the step was recorded: the read waits for the loss only, and the
        // browser keeps painting while the GPU works.
        let value = loss.data().to_vec_async().await?[0];
        if step == 0 {
            check_first_loss(report, &b, &initial, value)?;
        }
        losses.push(value);
        let bar = (value / 2.5 * 100.0).clamp(0.0, 100.0);
        let line = format!("step {:>2}  loss {value:.4}", step + 1);
        let row = append(doc, "losses", "li", "loss", &line).map_err(js_failure)?;
        let fill = doc.create_element("span").map_err(js_failure)?;
        fill.set_class_name("bar");
        fill.set_attribute("style", &format!("width: {bar:.1}%"))
            .map_err(js_failure)?;
        row.append_child(&fill).map_err(js_failure)?;
    }
    let head = mean(&losses[..5.min(losses.len())]);
    let tail = mean(&losses[losses.len().saturating_sub(5)..]);
    let finite = losses.iter().all(|l| l.is_finite());
    report.push(
        format!("digits MLP {FEATURES}-{HIDDEN}-{CLASSES}: loss falls over {STEPS} Adam steps"),
        finite && losses.len() == STEPS && tail < 0.6 * head,
        format!("mean of the first 5 losses {head:.4}, of the last 5 {tail:.4} (needs < 60%)"),
    );
    Ok(())
}

/// The first step's loss (before any update) against the CPU forward pass and
/// cross-entropy of the initial weights.
fn check_first_loss(
    report: &mut Report,
    batch: &Digits,
    initial: &[Vec<f32>],
    gpu: f32,
) -> Result<(), Failure> {
    let params: [Vec<f32>; 4] = initial
        .to_vec()
        .try_into()
        .map_err(|p: Vec<Vec<f32>>| format!("expected 4 parameters, the model has {}", p.len()))?;
    let logits = reference::mlp_logits(&batch.features, &params, FEATURES);
    let cpu = reference::cross_entropy(&logits, &batch.labels, CLASSES);
    let ok = tang_testing::close(f64::from(gpu), cpu, 1e-5, 1e-5);
    report.push(
        "first training loss: GPU forward + cross_entropy vs CPU",
        ok,
        format!("GPU {gpu:.6}, CPU {cpu:.6}"),
    );
    Ok(())
}

fn mean(v: &[f32]) -> f32 {
    v.iter().sum::<f32>() / v.len().max(1) as f32
}

/// Appends a `tag` element with `class` and `text` to the element with id `parent`.
fn append(
    doc: &Document,
    parent: &str,
    tag: &str,
    class: &str,
    text: &str,
) -> Result<web_sys::Element, JsValue> {
    let list = doc
        .get_element_by_id(parent)
        .ok_or_else(|| JsValue::from_str(&format!("the page has no element #{parent}")))?;
    let item = doc.create_element(tag)?;
    item.set_class_name(class);
    item.set_text_content(Some(text));
    list.append_child(&item)?;
    Ok(item)
}

/// Sets the text of the element with id `id`.
fn set_text(doc: &Document, id: &str, text: &str) -> Result<(), JsValue> {
    doc.get_element_by_id(id)
        .ok_or_else(|| JsValue::from_str(&format!("the page has no element #{id}")))?
        .set_text_content(Some(text));
    Ok(())
}

/// A DOM failure as an error of the run.
fn js_failure(e: JsValue) -> Failure {
    format!("DOM call failed: {e:?}").into()
}
