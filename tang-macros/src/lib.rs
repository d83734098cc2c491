//! # tang-macros: `#[kernel]`, `#[fused_grad]`, `#[kernels]`
//!
//! Ordinary Rust functions over `f32`, compiled at build time into GPU compute kernels
//! (WGSL validated by naga during expansion) and, with `#[fused_grad]`, into their
//! derivative kernels. The function itself stays an ordinary function: callable on the
//! CPU, and the reference every GPU test compares against. Use the macros through
//! `tang_runtime` (which re-exports them) or `tang_nn` (which re-exports the runtime);
//! generated code names only `::tang_runtime::__private` (and `::core`), with the first
//! segment rewritten to `::tang_nn::tang_runtime` in a crate that depends on `tang-nn` but
//! not on `tang-runtime` (read from the crate's `Cargo.toml`, as `proc-macro-crate` does).
//!
//! It also holds `#[derive(Module)]`, used through `tang_nn` (`use tang_nn::Module;`):
//! it parses a struct with named fields and emits one call per field into tang-nn,
//! which does the naming (see `tang_nn::module`).
//!
//! This crate is thin: it hands the tokens to `tang_expr::lower`, which parses, lowers,
//! differentiates, simplifies, emits and validates, and never panics: anything it does not
//! accept is a compile error at the offending code, every error of a function at once, and
//! the function is re-emitted with its signature and a body that does nothing, so code
//! calling it still compiles and rustc reports nothing a second time. Deep or long input
//! (1,000 nested parentheses, a 10,000-term sum, 20,000 statements) expands without
//! exhausting the compiler's stack, in time linear in its size
//! (`cargo run -p tang-tests --example expand_bench` measures it).
//!
//! ```
//! use tang_runtime::prelude::*;
//!
//! #[fused_grad]
//! pub fn gelu(x: f32) -> f32 {
//!     0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044_715 * x * x * x)).tanh())
//! }
//!
//! assert!((gelu(1.0) - 0.841_192).abs() < 1e-6);     // the CPU function, unchanged
//! assert!(gelu::WGSL.contains("@compute"));           // its kernel
//! let (value, [d_dx]) = gelu::grad(1.0);               // CPU twin of GRAD
//! assert_eq!(value, gelu(1.0));
//! assert!((d_dx - 1.082_964).abs() < 1e-5);
//! assert_eq!(gelu::vjp(1.0, 2.0), [2.0 * d_dx]);       // CPU twin of VJP
//! ```
//!
//! # What is emitted for `fn f`
//!
//! Beside the function, a module of the same name (and visibility) holding:
//!
//! | item | what |
//! |---|---|
//! | `f::WGSL: &str` | the kernel's WGSL source (byte-identical across builds) |
//! | `f::KERNEL: KernelDesc` | name, entry point, inputs, uniforms, in-out params, outputs, stable id, and the f16-storage variant the runtime runs when every tensor is f16 (computing in f32) |
//! | `f::launch(dev, ...)` | typed launcher: `&Tensor` per `f32` or `&mut f32` parameter, `f32` per uniform, in signature order; returns `Result<Tensor>` (one output), `Result<(Tensor, ..)>` (tuple) or `Result<()>` |
//!
//! With `#[fused_grad]` (or `#[fused_grad(wrt(a, b))]` to restrict the partials) also:
//!
//! | item | what |
//! |---|---|
//! | `f::GRAD`, `f::GRAD_WGSL` | values then `d_<out>_<x>` for each output and each differentiated input, one dispatch |
//! | `f::VJP`, `f::VJP_WGSL` | inputs then `g_<out>` per output in; `grad_<x>` per differentiated input out |
//! | `f::launch_grad(dev, ...)` | `(value, [partial; N])` tensors (`((v0, v1), [[..; N]; 2])` for a tuple) |
//! | `f::launch_vjp(dev, ..., g_out)` | `[Tensor; N]` |
//! | `f::grad(x, ...) -> (f32, [f32; N])` | CPU twin of GRAD. For a function returning a tuple of `M` floats: `((f32, ..), [[f32; N]; M])`, row `k` the partials of output `k` |
//! | `f::vjp(x, ..., g_out) -> [f32; N]` | CPU twin of VJP (one `g_` per output) |
//! | `f::FUSED: FusedFn` | (one output, no `&mut` parameters) the function as a differentiable tensor op over broadcast inputs: `FUSED.forward(&[&x, ..], &[uniforms])`, `FUSED.backward(grad_out, ..)` (VJP, then summed over broadcast dimensions); `tang_nn::autograd::apply(&f::FUSED, ..)` records it for autograd |
//!
//! Outputs are named `out` for a single `f32`, `out0, out1, ...` for a tuple (`out_`,
//! `out_0, ...` when a parameter is already named `out`, `g_out` or `d_out_<x>`; a
//! parameter named like a generated constant, `KERNEL` say, is fine too). The CPU
//! twins are plain Rust emitted from the simplified derivative graph (one `let` per node,
//! each calling the op's f32 evaluation), so no graph is built at run time.
//!
//! # The accepted language
//!
//! **Parameters**: `x: f32` (one value per element), `#[uniform] lr: f32` (one value for
//! the whole launch), `p: &mut f32` (read and written in place). **Returns**: `f32`, a
//! tuple of `f32`, or nothing.
//!
//! ```
//! use tang_runtime::prelude::*;
//!
//! #[kernel]
//! fn scale_add(x: f32, #[uniform] a: f32, acc: &mut f32) -> (f32, f32) {
//!     *acc += a * x;
//!     (x * a, *acc)
//! }
//! assert_eq!(scale_add::KERNEL.inputs(), &["x"]);
//! assert_eq!(scale_add::KERNEL.uniforms(), &["a"]);
//! assert_eq!(scale_add::KERNEL.inouts(), &["acc"]);
//! assert_eq!(scale_add::KERNEL.outputs(), &["out0", "out1"]);
//! ```
//!
//! **`let`, `let mut`, shadowing, assignment, compound assignment** (`+= -= *= /=`) to
//! locals and through `*p`, and `let y;` assigned later on every path (as in Rust):
//!
//! ```
//! use tang_runtime::prelude::*;
//!
//! #[kernel]
//! fn sgd(p: &mut f32, g: f32, #[uniform] lr: f32) {
//!     let step = lr * g;
//!     let step = step.clamp(-1.0, 1.0); // shadowing
//!     let mut q = *p;
//!     q -= step;
//!     *p = q;
//! }
//! let mut w = 1.0;
//! sgd(&mut w, 2.0, 0.1);
//! assert_eq!(w, 0.8);
//! ```
//!
//! **Arithmetic and literals**: `+ - * /`, unary `-`, suffixed or unsuffixed float
//! literals, integer literals where a float is expected (`x.powi(2)`), `as f32`:
//!
//! ```
//! use tang_runtime::prelude::*;
//!
//! #[kernel]
//! fn poly(x: f32) -> f32 {
//!     -x * 2.5f32 + x.powi(3) / 4.0
//! }
//! assert_eq!(poly(2.0), -3.0);
//! ```
//!
//! **`if`/`else`** as an expression or a statement, with `else if` chains and assignments
//! in the branches (lowered to `select` on every variable a branch changes);
//! **comparisons** and `&& || !`:
//!
//! ```
//! use tang_runtime::prelude::*;
//!
//! #[fused_grad]
//! fn huber(x: f32, #[uniform] delta: f32) -> f32 {
//!     let a = x.abs();
//!     let mut y = 0.5 * x * x;
//!     if a > delta && !(delta <= 0.0) {
//!         y = delta * (a - 0.5 * delta);
//!     }
//!     y
//! }
//!
//! #[kernel]
//! fn step3(x: f32) -> f32 {
//!     if x < -1.0 { -1.0 } else if x > 1.0 || x.is_nan() { 1.0 } else { x }
//! }
//! assert_eq!(huber::grad(3.0, 1.0), (2.5, [1.0]));
//! assert_eq!(step3(5.0), 1.0);
//! ```
//!
#![doc = concat!(
    "**`f32` methods** (Rust's own; the list is generated from tang's op table): `",
    tang_expr::kernel_methods_doc!(std),
    "is_nan`; **constants** `std::f32::consts::*`,"
)]
//! `core::f32::consts::*`, `f32::consts::*`, `f32::EPSILON` (and `MAX MIN MIN_POSITIVE
//! INFINITY NEG_INFINITY NAN`); **function-call syntax** `f32::max(a, b)`:
//!
//! ```
//! use tang_runtime::prelude::*;
//!
//! #[kernel]
//! fn wave(t: f32) -> f32 {
//!     let w = 2.0 * std::f32::consts::PI * t;
//!     f32::max(w.sin().mul_add(0.5, 0.5), f32::EPSILON).sqrt()
//! }
//! assert!((wave(0.25) - 1.0).abs() < 1e-6);
//! ```
//!
//! **Numerically stable and special functions** through
#![doc = concat!(
    "[`StableExt`](../tang_expr/ext/trait.StableExt.html) (generated from the table): ` ",
    tang_expr::kernel_methods_doc!(ext),
    "`, with hand-written derivatives and overflow-free forms; `gelu_erf` is PyTorch's"
)]
//! exact `nn.GELU()`. Bring the trait into scope with `use tang_runtime::prelude::*` so
//! the CPU function compiles. Rust's `f32` has unstable `erf`/`erfc` methods of its own,
//! so `x.erf()` draws rustc's `unstable_name_collisions` warning: write
//! `StableExt::erf(x)` (the lowering accepts both):
//!
//! ```
//! use tang_runtime::prelude::*;
//!
//! #[fused_grad]
//! fn bce_with_logits(z: f32, #[uniform] y: f32) -> f32 {
//!     z.softplus() - y * z
//! }
//! assert!(bce_with_logits(1e4, 1.0).is_finite());
//!
//! #[fused_grad]
//! fn gelu(x: f32) -> f32 {
//!     x.gelu_erf() // = 0.5 * x * (1.0 + StableExt::erf(x / 2f32.sqrt())), stable
//! }
//! assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
//! ```
//!
//! # When the GPU result equals the CPU function
//!
//! Each op has an accuracy stated in tang's op table (`tang_expr::Op::accuracy`): the GPU
//! result and the CPU function are each within it of the exact (f64) value on arguments in
//! `[-10, 10]`, and tests check this for every op on the GPU. Bit-for-bit equality holds
//! for `- abs signum floor ceil round trunc min max clamp copysign`, comparisons and `if`,
//! and for `+ - *` and `sqrt` where the driver rounds them correctly (drivers may fuse
//! `a * b + c` into one rounding; NVIDIA's division is not correctly rounded); `exp`,
//! `sin`, `tanh`, ... differ by a few ulps. The derivative kernels are exact to the same
//! extent, except that a kink's side may differ when an input lies within an ulp of it.
//!
//! Non-finite values behave as on the CPU: NaN, ±inf and the sign of zero give the CPU
//! function's result through every op (tested on every op at ±0, ±inf, NaN and ±f32::MAX
//! on the software adapter). Vulkan drivers compile float comparisons, `select`,
//! `min`/`max`/`clamp` and `x * 0.0` as if NaN and infinities never occur, so tang emits
//! comparisons and its helpers with NaN tests on the bits, and builds zero and non-finite
//! constants at run time where the driver cannot fold them. What remains: subnormal
//! inputs and results may be flushed to zero; WGSL leaves `sqrt`, `ln` and `log2` of
//! negative numbers and of zero, and division by zero, undefined (the adapters measured
//! give IEEE's NaN and infinities); and an `f64`-typed CPU expression never occurs, since
//! kernels are `f32` throughout.
//!
//! **Loops with constant bounds**, unrolled at compile time (`i as f32` uses the counter):
//!
//! ```
//! use tang_runtime::prelude::*;
//!
//! #[kernel]
//! fn horner(x: f32) -> f32 {
//!     let mut acc = 0.0;
//!     for i in 0..4 {
//!         acc = acc * x + (i as f32 + 1.0);
//!     }
//!     acc
//! }
//! assert_eq!(horner(2.0), 26.0); // ((1*2 + 2)*2 + 3)*2 + 4
//! ```
//!
//! **Calls between functions of one `#[kernels] mod`** (inlined; helpers need no
//! attribute), and **`#[fused_grad(wrt(...))]`**:
//!
//! ```
//! use tang_runtime::prelude::*;
//!
//! #[kernels]
//! mod act {
//!     use tang_runtime::prelude::*;
//!
//!     fn cube(x: f32) -> f32 {
//!         x * x * x
//!     }
//!
//!     #[fused_grad(wrt(x))]
//!     pub fn scaled_cube(x: f32, s: f32) -> f32 {
//!         s * cube(x)
//!     }
//! }
//! assert_eq!(act::scaled_cube::grad(2.0, 3.0), (24.0, [36.0]));
//! assert_eq!(act::scaled_cube::GRAD.outputs(), &["out", "d_out_x"]);
//! ```
//!
//! # What is rejected
//!
//! Everything else is a compile error saying what is not supported and what to write
//! instead: loops with run-time bounds, `while`, `loop`, `break`, `continue`, early
//! `return`, `?`, `match`, closures, macro calls, references other than `&mut f32`
//! parameters, integer, `bool` or `f64` parameters and literals, generics, `async`,
//! `unsafe`, recursion, unknown functions and methods, methods on non-floats, string and
//! char literals, struct/array/tuple indexing and fields, assigning to a uniform, a
//! by-value input, or a non-`mut` local, a misplaced or misspelled `#[uniform]`, return
//! types other than `f32`, tuples of `f32` and `()`, `wrt(...)` naming anything but an
//! `f32` input, a kernel with no per-element parameter (nothing sizes its launch), a
//! kernel named `core`, `std`, `alloc`, `tang_runtime` or `tang_expr` (its module would
//! shadow the crate), parameter names that are not ASCII or start with `__`, a kernel
//! attribute applied twice, and constant `clamp` bounds with `min > max` (Rust's `clamp`
//! panics on them). A shader naga rejects (a constant expression that overflows, say) is
//! a compile error at the expression that produced it.

use proc_macro::TokenStream;
use tang_expr::lower::{self, Mode};

mod module;
mod runtime_path;

/// The expansion with `::tang_runtime` pointed at where this crate finds the runtime
/// (see [`runtime_path`]).
fn in_this_crate(tokens: proc_macro2::TokenStream) -> TokenStream {
    match runtime_path::runtime_path() {
        Some(path) => runtime_path::rewrite(tokens, &path).into(),
        None => tokens.into(),
    }
}

/// Compiles an `f32` function into a GPU kernel: emits `f::WGSL`, `f::KERNEL` and
/// `f::launch` in a module beside the unchanged function (see the crate docs).
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_this_crate(lower::expand_kernel(attr.into(), item.into(), Mode::Kernel))
}

/// Like [`macro@kernel`], plus the derivative kernels `f::GRAD` and `f::VJP`, their
/// launchers and the CPU twins `f::grad` and `f::vjp`. `#[fused_grad(wrt(x, y))]`
/// limits the partials to the named inputs.
#[proc_macro_attribute]
pub fn fused_grad(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_this_crate(lower::expand_kernel(
        attr.into(),
        item.into(),
        Mode::FusedGrad,
    ))
}

/// On an inline module: compiles each function marked `#[kernel]` or `#[fused_grad]`,
/// letting them call (inlined) every function of the module.
#[proc_macro_attribute]
pub fn kernels(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_this_crate(lower::expand_kernels(attr.into(), item.into()))
}

/// Marks a kernel parameter as uniform (`#[uniform] lr: f32`: one value for the whole
/// launch). The kernel macros consume it; anywhere else it is a compile error.
#[proc_macro_attribute]
pub fn uniform(_attr: TokenStream, item: TokenStream) -> TokenStream {
    lower::expand_misplaced_uniform(item.into()).into()
}

/// `#[derive(Module)]` on a struct with named fields: implements `tang_nn::Module`, each
/// field a child module named by the field (PyTorch's attribute naming, so the state dict
/// has PyTorch's keys). `#[module(skip)]` leaves out a field that is not a module (a
/// config number, a flag); `#[module(name = "...")]` renames one. Use it through
/// `tang_nn` (`use tang_nn::Module;` brings the trait and the derive).
#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(item: TokenStream) -> TokenStream {
    module::expand_derive_module(item.into()).into()
}
