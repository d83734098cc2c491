//! Memory-bound cases: copy bandwidth, a fused elementwise chain, GELU forward and its
//! fused VJP (tanh form as a `#[fused_grad]` kernel, exact form through `ops`), tiny
//! launches, and an Adam step over 124M parameters.

use std::time::Instant;

use tang_runtime::{Binding, Device, Error, RawKernel, Tensor, fused_grad, kernel};

use super::Report;

/// Uniform numbers in [-1, 1): real random data (never zeros).
pub fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = tang_nn::rng::SplitMix64::new(seed);
    (0..n)
        .map(|_| (rng.next_f64() * 2.0 - 1.0) as f32)
        .collect()
}

/// `v` rounded to f16 values (to nearest even), kept as f32: inputs whose f64 check is
/// exact for f16 operands.
pub fn rounded_f16(v: Vec<f32>) -> Vec<f32> {
    v.into_iter()
        .map(|x| tang_runtime::half::f16::from_f32(x).to_f32())
        .collect()
}

/// Median milliseconds of one call of `f`. Each repeat records `k` calls back to back and
/// then waits for the GPU once, with `k` chosen so a repeat holds about 20 ms of GPU work:
/// a submit-and-wait costs 0.05 ms on a warm H200 through wgpu (`copy_256MiB_wait_each`
/// against `copy_256MiB`) and far more on a GPU that has idled, a large share of a
/// sub-millisecond kernel (PyTorch's CUDA-event timing does not include it).
pub fn time(
    dev: &Device,
    warm: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<(), Error>,
) -> Result<f64, Error> {
    for _ in 0..warm.max(1) {
        f()?;
    }
    dev.sync()?;
    // The per-call estimate that sizes `k` comes from a few calls behind one wait, the
    // smallest of three tries: one call alone is dominated by the wait, and a first call
    // may pay for buffer creation.
    let mut single = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        for _ in 0..4 {
            f()?;
        }
        dev.sync()?;
        single = single.min(t.elapsed().as_secs_f64() * 1e3 / 4.0);
    }
    let k = ((20.0 / single.max(1e-3)).ceil() as usize).clamp(1, 256);
    let mut ms = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        for _ in 0..k {
            f()?;
        }
        dev.sync()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3 / k as f64);
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms[ms.len() / 2])
}

/// Keeps the GPU busy for about `seconds` so that its clocks have ramped up before the
/// first timed case (an idle GPU starts slow; PyTorch's side runs on a warm one).
pub fn warm_up(dev: &Device, seconds: f64) -> Result<(), Error> {
    let n = 1usize << 24;
    let x = Tensor::from_slice(dev, &random(n, 77), &[n])?;
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < seconds {
        for _ in 0..20 {
            dev.launch(&gelu::KERNEL, &[&x], &[], &[])?;
        }
        dev.sync()?;
    }
    Ok(())
}

/// `x += 1` in place: the tiny launch PyTorch's `tiny_add` case times (`t.add_(1.0)`).
#[kernel]
pub fn add_one(x: &mut f32) {
    *x += 1.0;
}

/// A vec4 copy over a 2-D grid (any length that is a multiple of 4).
// SAFETY: every access is guarded by `i < p.n` (`p.n4`), the length the launch passes for
// the bound tensors; trusted so the copy is timed as tang's own kernels run.
#[allow(unsafe_code)]
const COPY: RawKernel = unsafe {
    RawKernel::trusted(
        "copy_vec4",
        "struct P { n4: u32 }\n\
     @group(0) @binding(0) var<uniform> p: P;\n\
     @group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;\n\
     @group(0) @binding(2) var<storage, read_write> dst: array<vec4<f32>>;\n\
     @compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n\
       let i = g.x + g.y * nwg.x * 256u;\n\
       if (i < p.n4) { dst[i] = src[i]; }\n\
     }",
        "main",
    )
};

/// A copy with one `f32` per thread (compare with [`COPY`]).
// SAFETY: every access is guarded by `i < p.n` (`p.n4`), the length the launch passes for
// the bound tensors; trusted so the copy is timed as tang's own kernels run.
#[allow(unsafe_code)]
const COPY_SCALAR: RawKernel = unsafe {
    RawKernel::trusted(
        "copy_scalar",
        "struct P { n: u32 }\n\
     @group(0) @binding(0) var<uniform> p: P;\n\
     @group(0) @binding(1) var<storage, read> src: array<f32>;\n\
     @group(0) @binding(2) var<storage, read_write> dst: array<f32>;\n\
     @compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n\
       let i = g.x + g.y * nwg.x * 256u;\n\
       if (i < p.n) { dst[i] = src[i]; }\n\
     }",
        "main",
    )
};

/// GELU, tanh form (what `torch_anchors.py` times).
#[fused_grad]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044_715 * x * x * x)).tanh())
}

/// Adam with bias corrections passed in (PyTorch's update).
#[kernel]
#[allow(clippy::too_many_arguments)]
pub fn adam(
    p: &mut f32,
    m: &mut f32,
    v: &mut f32,
    g: f32,
    #[uniform] lr: f32,
    #[uniform] b1: f32,
    #[uniform] b2: f32,
    #[uniform] eps: f32,
    #[uniform] bc1: f32,
    #[uniform] bc2: f32,
) {
    *m = b1 * *m + (1.0 - b1) * g;
    *v = b2 * *v + (1.0 - b2) * g * g;
    *p -= lr * (*m / bc1) / ((*v / bc2).sqrt() + eps);
}

fn size_name(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{}M", n >> 20)
    } else {
        format!("{}K", n >> 10)
    }
}

/// The rate in GB/s of moving `bytes` in `ms` milliseconds (for [`case`]).
fn gb(bytes: f64) -> impl Fn(f64) -> f64 {
    move |ms| bytes / ms / 1e6
}

fn case(
    report: &mut Report,
    name: &str,
    r: Result<f64, Error>,
    rate: impl Fn(f64) -> f64,
    unit: &str,
) {
    match r {
        Ok(ms) => report.add_rate(name, ms, rate(ms), unit),
        Err(e) => report.fail(name, &e),
    }
}

/// Broadcast adds of a `[R, R]` matrix with a column `[R, 1]` and with a row `[R]`
/// (`ops::add`, the broadcasting launch path), beside the same-shape add and a copy of the
/// matrix (`ops::clone`: read once, written once), each in GB/s of its traffic and as a
/// share of the copy's bandwidth. `R` is 4096 (1024 with `--quick`).
fn broadcast_add(dev: &Device, quick: bool, (warm, reps): (usize, usize), report: &mut Report) {
    let r: usize = if quick { 1024 } else { 4096 };
    let prefix = format!("broadcast_add_{r}x{r}");
    if !report.wants(&prefix) {
        return;
    }
    let a = match Tensor::from_slice(dev, &random(r * r, 5), &[r, r]) {
        Ok(a) => a,
        Err(e) => return report.fail(&prefix, &e),
    };
    let copy_bytes = 2.0 * 4.0 * (r * r) as f64;
    let copy = time(dev, warm, reps, || tang_runtime::ops::clone(&a).map(drop));
    let copy_gbps = copy.as_ref().ok().map(|ms| copy_bytes / ms / 1e6);
    case(
        report,
        &format!("{prefix}_copy"),
        copy,
        |ms| copy_bytes / ms / 1e6,
        "GB/s",
    );
    let cases: [(&str, &[usize]); 3] = [("same", &[r, r]), ("col", &[r, 1]), ("row", &[r])];
    for (kind, shape) in cases {
        let name = format!("{prefix}_{kind}");
        let b_len: usize = shape.iter().product();
        let result = Tensor::from_slice(dev, &random(b_len, 6), shape)
            .and_then(|b| time(dev, warm, reps, || tang_runtime::ops::add(&a, &b).map(drop)));
        let bytes = (2 * r * r + b_len) as f64 * 4.0;
        if let (Ok(ms), Some(c)) = (&result, copy_gbps) {
            println!(
                "  ({name} at {:.0}% of copy bandwidth)",
                100.0 * bytes / ms / 1e6 / c
            );
        }
        case(report, &name, result, |ms| bytes / ms / 1e6, "GB/s");
    }
}

/// Runs the memory-bound cases.
pub fn run(dev: &Device, quick: bool, report: &mut Report) {
    let n: usize = if quick { 1 << 22 } else { 1 << 26 };
    let (warm, reps) = if quick { (1, 3) } else { (5, 30) };
    let sz = size_name(n);
    let x = Tensor::from_slice(dev, &random(n, 1), &[n]);
    let g = Tensor::from_slice(dev, &random(n, 2), &[n]);
    let (x, g) = match (x, g) {
        (Ok(x), Ok(g)) => (x, g),
        (Err(e), _) | (_, Err(e)) => return report.fail("elementwise setup", &e),
    };

    let copy_name = format!("copy_{}MiB", (n * 4) >> 20);
    let mut copy_ms = None;
    if report.wants(&copy_name) {
        let r = dev.empty(&[n], tang_runtime::DType::F32).and_then(|dst| {
            let n4 = (n / 4) as u32;
            // Balanced 2-D grid (65,536 groups as 32,768 × 2, not 65,535 × 2 with half idle).
            let (gx, gy) = tang_runtime::tang_expr::kernel::dispatch_size(u64::from(n4))
                .ok_or_else(|| Error::Map("copy: too many elements".into()))?;
            time(dev, warm, reps, || {
                dev.dispatch_raw(
                    &COPY,
                    &[],
                    &[
                        Binding::Uniform(&n4.to_ne_bytes()),
                        Binding::Read(&x),
                        Binding::ReadWrite(&dst),
                    ],
                    [gx, gy, 1],
                )
            })
        });
        copy_ms = r.as_ref().ok().copied();
        case(report, &copy_name, r, gb(2.0 * n as f64 * 4.0), "GB/s");
        // The evidence for two design choices: one f32 per thread against the vec4 copy
        // above (why generated kernels compute four elements per thread), and one launch
        // per wait (what a submit-and-wait costs, why timing amortises it).
        let scalar = format!("{copy_name}_scalar");
        let r = dev.empty(&[n], tang_runtime::DType::F32).and_then(|dst| {
            let (gx, gy) = tang_runtime::tang_expr::kernel::dispatch_size(n as u64)
                .ok_or_else(|| Error::Map("copy: too many elements".into()))?;
            time(dev, warm, reps, || {
                dev.dispatch_raw(
                    &COPY_SCALAR,
                    &[],
                    &[
                        Binding::Uniform(&(n as u32).to_ne_bytes()),
                        Binding::Read(&x),
                        Binding::ReadWrite(&dst),
                    ],
                    [gx, gy, 1],
                )
            })
        });
        case(report, &scalar, r, gb(2.0 * n as f64 * 4.0), "GB/s");
        let each = format!("{copy_name}_wait_each");
        let r = dev.empty(&[n], tang_runtime::DType::F32).and_then(|dst| {
            let n4 = (n / 4) as u32;
            let (gx, gy) = tang_runtime::tang_expr::kernel::dispatch_size(u64::from(n4))
                .ok_or_else(|| Error::Map("copy: too many elements".into()))?;
            let mut ms = Vec::new();
            for _ in 0..reps.max(1) {
                let t = Instant::now();
                dev.dispatch_raw(
                    &COPY,
                    &[],
                    &[
                        Binding::Uniform(&n4.to_ne_bytes()),
                        Binding::Read(&x),
                        Binding::ReadWrite(&dst),
                    ],
                    [gx, gy, 1],
                )?;
                dev.sync()?;
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
            ms.sort_by(f64::total_cmp);
            Ok(ms[ms.len() / 2])
        });
        if let (Ok(one), Some(c)) = (&r, copy_ms) {
            println!(
                "  (one launch per wait costs {:.3} ms more than back to back)",
                one - c
            );
        }
        case(report, &each, r, gb(2.0 * n as f64 * 4.0), "GB/s");
    }

    let chain = format!("elementwise_chain_{sz}");
    if report.wants(&chain) {
        let f = |v: &[tang_runtime::tang_expr::Expr]| {
            let a = (v[0] * 1.5 + 0.25).tanh() * v[0];
            let b = (v[0] * v[0] + 1.0).sqrt() - a.max(0.0) * 0.5;
            b.exp().min(4.0) + a * b
        };
        let r = time(dev, warm, reps, || dev.map(&[&x], f).map(drop));
        if let (Ok(ms), Some(c)) = (&r, copy_ms) {
            println!(
                "  (elementwise chain at {:.0}% of copy bandwidth)",
                100.0 * c / ms
            );
        }
        case(report, &chain, r, gb(2.0 * n as f64 * 4.0), "GB/s");
    }

    broadcast_add(dev, quick, (warm, reps), report);

    let fwd = format!("gelu_tanh_fwd_{sz}");
    if report.wants("gelu")
        && let Err(e) = check_gelu(dev)
    {
        report.fail("gelu_tanh_check", &e);
    }
    if report.wants(&fwd) {
        let r = time(dev, warm, reps, || {
            dev.launch(&gelu::KERNEL, &[&x], &[], &[]).map(drop)
        });
        case(report, &fwd, r, gb(n as f64 * 8.0), "GB/s(min traffic)");
    }
    let vjp = format!("gelu_tanh_vjp_{sz}");
    if report.wants(&vjp) {
        let r = time(dev, warm, reps, || {
            dev.launch(&gelu::VJP, &[&x, &g], &[], &[]).map(drop)
        });
        case(report, &vjp, r, gb(n as f64 * 12.0), "GB/s(min traffic)");
    }
    let fb = format!("gelu_tanh_fwd_bwd_{sz}");
    if report.wants(&fb) {
        let r = time(dev, warm, reps, || {
            let y = dev.launch(&gelu::KERNEL, &[&x], &[], &[])?;
            let dx = dev.launch(&gelu::VJP, &[&x, &g], &[], &[])?;
            drop((y, dx));
            Ok(())
        });
        case(report, &fb, r, gb(n as f64 * 16.0), "GB/s(min traffic)");
    }
    // The same kernels on f16 tensors (f16 storage, f32 arithmetic): half the traffic.
    let fwd16 = format!("gelu_tanh_fwd_f16_{sz}");
    let vjp16 = format!("gelu_tanh_vjp_f16_{sz}");
    if report.wants(&fwd16) || report.wants(&vjp16) {
        let half = |t: &Tensor| tang_runtime::ops::to_dtype(t, tang_runtime::DType::F16);
        match half(&x).and_then(|x16| Ok((x16, half(&g)?))) {
            Ok((x16, g16)) => {
                if report.wants(&fwd16) {
                    let r = time(dev, warm, reps, || {
                        dev.launch(&gelu::KERNEL, &[&x16], &[], &[]).map(drop)
                    });
                    case(report, &fwd16, r, gb(n as f64 * 4.0), "GB/s(min traffic)");
                }
                if report.wants(&vjp16) {
                    let r = time(dev, warm, reps, || {
                        dev.launch(&gelu::VJP, &[&x16, &g16], &[], &[]).map(drop)
                    });
                    case(report, &vjp16, r, gb(n as f64 * 6.0), "GB/s(min traffic)");
                }
            }
            Err(e) => report.fail(&fwd16, &e),
        }
    }
    gelu_erf_cases(dev, [&x, &g], &sz, (warm, reps), report);
    drop((x, g));

    let total: usize = if quick { 12_000_000 } else { 124_000_000 };
    let name = format!("adam_step_{}M", total / 1_000_000);
    if report.wants(&name) {
        let r = adam_step(dev, total, warm, reps);
        case(report, &name, r, gb(total as f64 * 28.0), "GB/s(28B/param)");
    }

    // Last: the tiny launches leave the GPU mostly idle, and an idle GPU clocks down.
    for launches in [100usize, 1000] {
        let name = format!("tiny_add_x{launches}");
        if !report.wants(&name) {
            continue;
        }
        // Wall time of recording the launches plus one wait (not amortised further: the
        // per-launch cost on the host is what this case measures), and apart from it the
        // recording alone (`_record`): the host's share, which must not grow with what
        // the program ran before (tang-runtime's `launch_host_cost` test checks that).
        let x0 = random(1024, 3);
        let r = Tensor::from_slice(dev, &x0, &[1024]).and_then(|t| {
            let mut count = 0usize;
            for _ in 0..3 {
                add_one::launch(dev, &t)?;
                count += 1;
            }
            dev.sync()?;
            let (mut ms, mut record_ms) = (Vec::new(), Vec::new());
            for _ in 0..if quick { 5 } else { 20 } {
                let start = Instant::now();
                for _ in 0..launches {
                    add_one::launch(dev, &t)?;
                }
                record_ms.push(start.elapsed().as_secs_f64() * 1e3);
                dev.sync()?;
                ms.push(start.elapsed().as_secs_f64() * 1e3);
                count += launches;
            }
            // Every launch ran: the first element matches the CPU function applied as often.
            let mut want = x0[0];
            for _ in 0..count {
                add_one(&mut want);
            }
            let got = t.to_vec()?[0];
            if got != want {
                return Err(Error::Map(format!(
                    "tiny_add check: GPU {got}, CPU {want} after {count} launches"
                )));
            }
            let median = |mut v: Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            Ok((median(ms), median(record_ms)))
        });
        let per_launch = |ms: f64| ms * 1000.0 / launches as f64;
        let (total, record) = match r {
            Ok((total, record)) => (Ok(total), Ok(record)),
            Err(e) => (Err(Error::Map(e.to_string())), Err(e)),
        };
        case(report, &name, total, per_launch, "us/launch");
        case(
            report,
            &format!("{name}_record"),
            record,
            per_launch,
            "us/launch (recording only)",
        );
    }
}

/// The GPU GELU against its CPU twin (a benchmark of wrong results is worthless).
fn check_gelu(dev: &Device) -> Result<(), String> {
    let xs: Vec<f32> = random(4096, 9).iter().map(|v| v * 6.0).collect();
    let x = Tensor::from_slice(dev, &xs, &[xs.len()]).map_err(|e| e.to_string())?;
    let y = dev
        .launch(&gelu::KERNEL, &[&x], &[], &[])
        .map_err(|e| e.to_string())?;
    let got = y[0].to_vec().map_err(|e| e.to_string())?;
    for (i, (&xv, &gv)) in xs.iter().zip(&got).enumerate() {
        let want = gelu(xv);
        if (gv - want).abs() > 1e-5 * want.abs().max(1.0) {
            return Err(format!(
                "element {i}: gelu({xv}) = {gv} on the GPU, {want} on the CPU"
            ));
        }
    }
    Ok(())
}

/// The exact GELU (PyTorch's `nn.GELU()`, the nanoGPT recipe's) and its backward through
/// `ops::gelu_erf` / `ops::gelu_erf_backward`, f32 and f16, after checking the forward
/// against its CPU twin.
fn gelu_erf_cases(
    dev: &Device,
    [x, g]: [&Tensor; 2],
    sz: &str,
    (warm, reps): (usize, usize),
    report: &mut Report,
) {
    use tang_runtime::ops::{gelu_erf, gelu_erf_backward, to_dtype};
    let n = x.len() as f64;
    let names = ["", "_f16"].map(|d| {
        [
            format!("gelu_erf_fwd{d}_{sz}"),
            format!("gelu_erf_vjp{d}_{sz}"),
        ]
    });
    if !names.iter().flatten().any(|c| report.wants(c)) {
        return;
    }
    if let Err(e) = check_gelu_erf(dev) {
        report.fail("gelu_erf_check", &e);
        return;
    }
    for (half, [fwd, vjp]) in [false, true].into_iter().zip(names) {
        let bytes = if half { 2.0 } else { 4.0 };
        let operands = if half {
            to_dtype(x, tang_runtime::DType::F16)
                .and_then(|x16| Ok((x16, to_dtype(g, tang_runtime::DType::F16)?)))
        } else {
            Ok((x.clone(), g.clone()))
        };
        let (x, g) = match operands {
            Ok(t) => t,
            Err(e) => {
                report.fail(&fwd, &e);
                continue;
            }
        };
        if report.wants(&fwd) {
            let r = time(dev, warm, reps, || gelu_erf(&x).map(drop));
            case(report, &fwd, r, gb(n * 2.0 * bytes), "GB/s(min traffic)");
        }
        if report.wants(&vjp) {
            let r = time(dev, warm, reps, || gelu_erf_backward(&g, &x).map(drop));
            case(report, &vjp, r, gb(n * 3.0 * bytes), "GB/s(min traffic)");
        }
    }
}

/// The GPU exact GELU against its CPU twin.
fn check_gelu_erf(dev: &Device) -> Result<(), String> {
    use tang_runtime::StableExt;
    let xs: Vec<f32> = random(4096, 10).iter().map(|v| v * 8.0).collect();
    let got = Tensor::from_slice(dev, &xs, &[xs.len()])
        .and_then(|x| tang_runtime::ops::gelu_erf(&x))
        .and_then(|y| y.to_vec())
        .map_err(|e| e.to_string())?;
    for (i, (&xv, &gv)) in xs.iter().zip(&got).enumerate() {
        let want = xv.gelu_erf();
        if (gv - want).abs() > 1e-5 * want.abs().max(1.0) {
            return Err(format!(
                "element {i}: gelu_erf({xv}) = {gv} on the GPU, {want} on the CPU"
            ));
        }
    }
    Ok(())
}

/// The GPU Adam update against its CPU twin on a few elements.
fn check_adam(dev: &Device, u: &[f32; 6]) -> Result<(), Error> {
    let vals = random(12, 99);
    let (p0, m0, v0, g0) = (
        &vals[0..3],
        &vals[3..6],
        vals[6..9].iter().map(|v| v * v).collect::<Vec<_>>(),
        &vals[9..12],
    );
    let p = Tensor::from_slice(dev, p0, &[3])?;
    let m = Tensor::from_slice(dev, m0, &[3])?;
    let v = Tensor::from_slice(dev, &v0, &[3])?;
    let g = Tensor::from_slice(dev, g0, &[3])?;
    dev.launch(&adam::KERNEL, &[&g], &[&p, &m, &v], u)?;
    let got = p.to_vec()?;
    for i in 0..3 {
        let (mut pc, mut mc, mut vc) = (p0[i], m0[i], v0[i]);
        adam(
            &mut pc, &mut mc, &mut vc, g0[i], u[0], u[1], u[2], u[3], u[4], u[5],
        );
        if (got[i] - pc).abs() > 1e-6 * pc.abs().max(1.0) {
            return Err(Error::Map(format!(
                "adam check: element {i}: GPU {} vs CPU {pc}",
                got[i]
            )));
        }
    }
    Ok(())
}

/// One Adam step over `total` parameters in 12 tensors: 12 in-place launches.
fn adam_step(dev: &Device, total: usize, warm: usize, reps: usize) -> Result<f64, Error> {
    let each = total / 12;
    let mut state = Vec::new();
    for i in 0..12u64 {
        let p = Tensor::from_slice(dev, &random(each, 10 + i), &[each])?;
        let m = Tensor::from_slice(dev, &random(each, 30 + i), &[each])?;
        let v = dev.map(
            &[&Tensor::from_slice(dev, &random(each, 50 + i), &[each])?],
            |a| a[0] * a[0],
        )?;
        let g = Tensor::from_slice(dev, &random(each, 70 + i), &[each])?;
        state.push((p, m, v, g));
    }
    let (b1, b2) = (0.9f32, 0.999f32);
    check_adam(dev, &[1e-3, b1, b2, 1e-8, 1.0 - b1, 1.0 - b2])?;
    let mut step = 0i32;
    time(dev, warm, reps, || {
        step += 1;
        let u = [1e-3, b1, b2, 1e-8, 1.0 - b1.powi(step), 1.0 - b2.powi(step)];
        for (p, m, v, g) in &state {
            dev.launch(&adam::KERNEL, &[g], &[p, m, v], &u)?;
        }
        Ok(())
    })
}
