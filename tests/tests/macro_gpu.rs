//! Every kernel of the library on the GPU (the software adapter in CI) against its CPU
//! twin, on 100,000 inputs including 0, ±1e-6, ±1, ±20, ±1e4 and random values.

use tang_runtime::{Device, Tensor};
use tang_tests::kernels::table::{FusedCase, fused_cases};
use tang_tests::{Rng, close};

const N: usize = 100_000;
const SPECIAL: [f32; 13] = [
    0.0, -0.0, 1e-6, -1e-6, 1.0, -1.0, 20.0, -20.0, 1e4, -1e4, 0.5, -3.0, 6.0,
];

/// `N` inputs: every special value (and every pair of them across inputs), then a mix
/// of small, moderate and large random values.
fn inputs(count: usize, rng: &mut Rng) -> Vec<Vec<f32>> {
    let mut cols = vec![Vec::with_capacity(N); count];
    for (k, col) in cols.iter_mut().enumerate() {
        for e in 0..N {
            let pairs = SPECIAL.len().pow(count as u32);
            let v = if e < pairs {
                SPECIAL[(e / SPECIAL.len().pow(k as u32)) % SPECIAL.len()]
            } else {
                match rng.below(4) {
                    0 => rng.range_f32(-1.0, 1.0),
                    1 | 2 => rng.range_f32(-10.0, 10.0),
                    _ => rng.range_f32(-1e4, 1e4),
                }
            };
            col.push(v);
        }
    }
    cols
}

fn upload(dev: &Device, cols: &[Vec<f32>]) -> Vec<Tensor> {
    cols.iter()
        .map(|c| Tensor::from_slice(dev, c, &[c.len()]).unwrap())
        .collect()
}

fn download(ts: Vec<Tensor>) -> Vec<Vec<f32>> {
    ts.iter().map(|t| t.to_vec().unwrap()).collect()
}

fn check(name: &str, what: &str, got: &[Vec<f32>], want: &[Vec<f32>], x: &[Vec<f32>]) {
    assert_eq!(got.len(), want.len(), "{name} {what}: output count");
    for (o, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), N);
        let mut bad = 0;
        let mut first = None;
        for e in 0..N {
            if !close(g[e] as f64, w[e] as f64, 1e-5, 2e-4) {
                bad += 1;
                first.get_or_insert(e);
            }
        }
        if let Some(e) = first {
            let at: Vec<f32> = x.iter().map(|c| c[e]).collect();
            panic!(
                "{name} {what}[{o}]: {bad} of {N} differ; first at {at:?}: GPU {} vs CPU {}",
                g[e], w[e]
            );
        }
    }
}

fn run_case(dev: &Device, c: &FusedCase, rng: &mut Rng) {
    let x = inputs(c.inputs, rng);
    let g: Vec<Vec<f32>> = (0..c.outputs)
        .map(|_| (0..N).map(|_| rng.range_f32(-2.0, 2.0)).collect())
        .collect();
    let xt = upload(dev, &x);
    let gt = upload(dev, &g);
    let xr: Vec<&Tensor> = xt.iter().collect();
    let gr: Vec<&Tensor> = gt.iter().collect();

    // CPU twins, column by column.
    let n_grad = c.outputs * (1 + c.wrt.len());
    let mut value = vec![Vec::with_capacity(N); c.outputs];
    let mut grad = vec![Vec::with_capacity(N); n_grad];
    let mut vjp = vec![Vec::with_capacity(N); c.wrt.len()];
    for e in 0..N {
        let xe: Vec<f32> = x.iter().map(|col| col[e]).collect();
        let ge: Vec<f32> = g.iter().map(|col| col[e]).collect();
        for (o, v) in (c.value)(&xe).into_iter().enumerate() {
            value[o].push(v);
        }
        let (v, d) = (c.grad)(&xe);
        for (k, v) in v.into_iter().chain(d).enumerate() {
            grad[k].push(v);
        }
        for (k, v) in (c.vjp)(&xe, &ge).into_iter().enumerate() {
            vjp[k].push(v);
        }
    }
    check(
        c.name,
        "value",
        &download((c.launch)(dev, &xr).unwrap()),
        &value,
        &x,
    );
    check(
        c.name,
        "grad",
        &download((c.launch_grad)(dev, &xr).unwrap()),
        &grad,
        &x,
    );
    check(
        c.name,
        "vjp",
        &download((c.launch_vjp)(dev, &xr, &gr).unwrap()),
        &vjp,
        &x,
    );
}

#[test]
fn fused_kernels_match_their_cpu_twins_on_the_gpu() {
    let dev = Device::new().unwrap();
    let mut rng = Rng::new(7);
    for c in fused_cases() {
        run_case(&dev, &c, &mut rng);
    }
}

#[test]
fn gelu_stays_finite_at_the_extremes() {
    use tang_tests::kernels::{composite::gelu_erf, gelu_tanh};
    let dev = Device::new().unwrap();
    let x = Tensor::from_slice(&dev, &[-20.0, 20.0, -1e4, 1e4], &[4]).unwrap();
    for (v, [d]) in [
        gelu_tanh::launch_grad(&dev, &x).unwrap(),
        gelu_erf::launch_grad(&dev, &x).unwrap(),
    ] {
        for t in [v, d] {
            let got = t.to_vec().unwrap();
            assert!(got.iter().all(|v| v.is_finite()), "{got:?}");
        }
    }
    assert_eq!(gelu_tanh::grad(20.0), (20.0, [1.0]));
    assert_eq!(gelu_tanh::grad(-20.0), (-0.0, [0.0]));
}

#[test]
fn optimizer_updates_match_the_cpu_in_place() {
    use tang_tests::kernels::{adam, adamw, sgd_momentum};
    let dev = Device::new().unwrap();
    let mut rng = Rng::new(9);
    let col = |rng: &mut Rng, lo: f32, hi: f32| -> Vec<f32> {
        (0..N).map(|_| rng.range_f32(lo, hi)).collect()
    };
    let (p, m, v, g) = (
        col(&mut rng, -3.0, 3.0),
        col(&mut rng, -1.0, 1.0),
        col(&mut rng, 0.0, 1.0),
        col(&mut rng, -5.0, 5.0),
    );
    let t = |c: &Vec<f32>| Tensor::from_slice(&dev, c, &[N]).unwrap();
    let u = (1e-3, 0.9, 0.999, 1e-8, 0.01, 0.19, 0.002);

    let (pt, mt, vt, gt) = (t(&p), t(&m), t(&v), t(&g));
    adam::launch(&dev, &pt, &mt, &vt, &gt, u.0, u.1, u.2, u.3, u.5, u.6).unwrap();
    let (mut cp, mut cm, mut cv) = (p.clone(), m.clone(), v.clone());
    for e in 0..N {
        adam(
            &mut cp[e], &mut cm[e], &mut cv[e], g[e], u.0, u.1, u.2, u.3, u.5, u.6,
        );
    }
    let x = [p.clone()];
    check(
        "adam",
        "p,m,v",
        &download(vec![pt, mt, vt]),
        &[cp, cm, cv],
        &x,
    );

    let (pt, mt, vt, gt) = (t(&p), t(&m), t(&v), t(&g));
    adamw::launch(&dev, &pt, &mt, &vt, &gt, u.0, u.1, u.2, u.3, u.4, u.5, u.6).unwrap();
    let (mut cp, mut cm, mut cv) = (p.clone(), m.clone(), v.clone());
    for e in 0..N {
        adamw(
            &mut cp[e], &mut cm[e], &mut cv[e], g[e], u.0, u.1, u.2, u.3, u.4, u.5, u.6,
        );
    }
    check(
        "adamw",
        "p,m,v",
        &download(vec![pt, mt, vt]),
        &[cp, cm, cv],
        &x,
    );

    let (pt, bt, gt) = (t(&p), t(&m), t(&g));
    sgd_momentum::launch(&dev, &pt, &bt, &gt, 0.1, 0.9, 1e-4).unwrap();
    let (mut cp, mut cb) = (p.clone(), m.clone());
    for e in 0..N {
        sgd_momentum(&mut cp[e], &mut cb[e], g[e], 0.1, 0.9, 1e-4);
    }
    check(
        "sgd_momentum",
        "p,buf",
        &download(vec![pt, bt]),
        &[cp, cb],
        &x,
    );
}
