//! Expansion time of the kernel macros on large kernels, against rustc alone.
//!
//! Prints, for kernels of growing size, the time `#[kernel]` and `#[fused_grad]` spend
//! expanding them (the same library the macros run: parse, lower, simplify, differentiate,
//! emit WGSL, validate with naga, emit the Rust items and the CPU twins) and the time rustc
//! takes to compile the plain function alone. Near-linear expansion shows as a seconds-per-
//! statement figure that stays flat while the size doubles.
//!
//! ```text
//! cargo run -p tang-tests --example expand_bench            # the full table
//! cargo run -p tang-tests --example expand_bench -- quick   # sizes up to 2,500 only
//! ```
//!
//! The library is built as in the macro (opt-level 2 for tang-expr, syn and naga in the
//! dev profile, see the workspace `Cargo.toml`), so the figures are the macro's.

use std::process::Command;
use std::str::FromStr;
use std::time::Instant;

use proc_macro2::TokenStream;
use tang_expr::lower::{Mode, compile_kernel};

/// `n` statements `let x = x * 1.0001 + 0.5;`: one long chain of shadowed locals.
fn chain_of_lets(n: usize) -> String {
    let body = "    let x = x * 1.0001 + 0.5;\n".repeat(n);
    format!("pub fn lets(x: f32) -> f32 {{\n{body}    x\n}}\n")
}

/// One expression of `n` terms `x * x + x * x + ... + x * x` (a left-deep tree `n` deep).
fn long_sum(n: usize) -> String {
    let terms = vec!["x * x"; n].join(" + ");
    format!("pub fn sum(x: f32) -> f32 {{\n    {terms}\n}}\n")
}

/// Seconds `compile_kernel` takes on `src` in `mode` (best of `reps`), and of those the
/// seconds naga takes to validate the kernels it produced; or why it failed.
fn expand(src: &str, mode: Mode, reps: usize) -> Result<(f64, f64), String> {
    let item = TokenStream::from_str(src).map_err(|e| e.to_string())?;
    let mut best = (f64::INFINITY, 0.0);
    for _ in 0..reps {
        let t = Instant::now();
        let done =
            compile_kernel(TokenStream::new(), item.clone(), mode).map_err(|e| e.to_string())?;
        let total = t.elapsed().as_secs_f64();
        let t = Instant::now();
        for k in &done.kernels {
            tang_expr::validate(&k.wgsl).map_err(|e| e.to_string())?;
        }
        if total < best.0 {
            best = (total, t.elapsed().as_secs_f64());
        }
    }
    Ok(best)
}

/// Seconds rustc takes to compile `src` alone as a library (no macro involved), `failed`
/// when rustc rejects or crashes on it (past about 5,000 terms rustc's own stack
/// overflows on the long sum), or `-` when rustc cannot be run.
fn rustc_alone(src: &str) -> String {
    let dir = std::env::temp_dir().join(format!("tang_expand_bench_{}", std::process::id()));
    let file = dir.join("plain.rs");
    if std::fs::create_dir_all(&dir).is_err() || std::fs::write(&file, src).is_err() {
        return "-".to_string();
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let t = Instant::now();
    let run = Command::new(rustc)
        .args(["--edition", "2024", "--crate-type", "lib", "--emit", "obj"])
        .arg("-o")
        .arg(dir.join("plain.o"))
        .arg(&file)
        .output();
    let secs = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    match run {
        Ok(out) if out.status.success() => format!("{secs:9.3}"),
        Ok(_) => "   failed".to_string(),
        Err(_) => "        -".to_string(),
    }
}

fn show(r: &Result<(f64, f64), String>) -> String {
    match r {
        Ok((s, naga)) => format!("{s:9.3} {naga:9.3}"),
        Err(e) => format!("  error: {}", e.lines().next().unwrap_or("")),
    }
}

fn row(what: &str, n: usize, src: &str) {
    let reps = if n <= 2_500 { 3 } else { 1 };
    let kernel = expand(src, Mode::Kernel, reps);
    let fused = expand(src, Mode::FusedGrad, reps);
    let per = |r: &Result<(f64, f64), String>| match r {
        Ok((s, _)) => format!("{:8.1}", s / n as f64 * 1e6),
        Err(_) => "       -".to_string(),
    };
    let rustc = rustc_alone(src);
    println!(
        "{what:<8} {n:>7} {} {} {} {} {rustc}",
        show(&kernel),
        per(&kernel),
        show(&fused),
        per(&fused),
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let sizes: &[usize] = if quick {
        &[625, 1_250, 2_500]
    } else {
        &[1_250, 2_500, 5_000, 10_000, 20_000]
    };
    println!(
        "{:<8} {:>7} {:>9} {:>9} {:>8} {:>9} {:>9} {:>8} {:>9}",
        "kernel",
        "size",
        "kernel s",
        "(naga s)",
        "us/size",
        "fused s",
        "(naga s)",
        "us/size",
        "rustc s"
    );
    for &n in sizes {
        row("lets", n, &chain_of_lets(n));
    }
    for &n in sizes.iter().filter(|&&n| n <= 10_000) {
        row("terms", n, &long_sum(n));
    }
}
