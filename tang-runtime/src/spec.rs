//! The kernel-definition layer: the one way a hand-written kernel of this crate is written.
//!
//! A kernel is a [`Spec`]: a name, a params struct declared with [`params!`] (a
//! `#[repr(C)]` [`bytemuck::Pod`] Rust struct whose WGSL `struct P` is emitted from the
//! Rust type), its ordered storage bindings ([`Slot`]), the WGSL pieces it builds on
//! (preludes, see `wgsl.rs`) and its body. The layer writes the declarations, so the
//! field order, the padding and the `@binding(i)` numbers of the WGSL cannot disagree with
//! the Rust side:
//!
//! ```text
//! <prelude pieces>
//! struct P { <fields of the params type, in order> }
//! @group(0) @binding(0) var<uniform> p: P;
//! @group(0) @binding(1) var<storage, read> <slot 0>: <type>;
//! @group(0) @binding(2) var<storage, read_write> <slot 1>: <type>;
//! <body>
//! ```
//!
//! A dispatch passes a value of the params type and the tensors in slot order; the kinds
//! of the bindings come from the slots. Specialisation is by WGSL `override` constants
//! (passed at dispatch, part of the pipeline key) or, for variants generated at run time
//! (tile shapes, team sizes), by [`Variants`]: one cache that generates and validates
//! outside its lock. Every text, static or generated, is validated by naga once per
//! process and leaked once ([`intern`]), then runs trusted: the kernels of this crate
//! guard every index by the sizes in their params, which the callers check against the
//! bound tensors. A new kernel is one file:
//!
//! ```ignore
//! use crate::spec::{Slot, Spec, params};
//! use crate::wgsl::{group_index, unit_f1};
//!
//! params! {
//!     /// Shape of a scale: `n` elements, multiplied by `k`.
//!     struct ScaleParams { n: u32, k: f32 }
//! }
//!
//! static SCALE: Spec<ScaleParams> = Spec::new(
//!     "scale",
//!     &[unit_f1!()],
//!     &[Slot::Read("x", "array<f32>"), Slot::ReadWrite("y", "array<f32>")],
//!     "
//! @compute @workgroup_size(256)
//! fn main(@builtin(global_invocation_id) g: vec3<u32>) {
//!     if (g.x < p.n) { y[g.x] = x[g.x] * p.k; }
//! }
//! ",
//! );
//!
//! pub fn scale(x: &Tensor, k: f32) -> Result<Tensor, Error> {
//!     let y = x.device().empty(x.shape(), DType::F32)?;
//!     let n = u32::try_from(x.len()).map_err(/* Error::TooLarge */)?;
//!     SCALE.dispatch(&[], &ScaleParams { n, k }, &[x, &y], grid(x.device(), "scale", ..)?)?;
//!     Ok(y)
//! }
//!
//! /// Every kernel this file can produce (the registry of its folder's `mod.rs` collects it).
//! pub(crate) fn kernels() -> Vec<Source> {
//!     vec![SCALE.source()]
//! }
//! ```

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock};

use crate::dispatch::Binding;
use crate::pipeline::RawKernel;
use crate::{Device, Error, Tensor};

/// A Rust scalar type that is also a WGSL scalar of the same size and name.
pub(crate) trait WgslScalar {
    /// The WGSL type name.
    const WGSL: &'static str;
}

impl WgslScalar for u32 {
    const WGSL: &'static str = "u32";
}
impl WgslScalar for i32 {
    const WGSL: &'static str = "i32";
}
impl WgslScalar for f32 {
    const WGSL: &'static str = "f32";
}

/// The params (uniform) struct of a kernel: a `#[repr(C)]` struct of 4-byte scalars,
/// declared with [`params!`], which also writes [`Params::FIELDS`].
pub(crate) trait Params: bytemuck::Pod {
    /// `(field, WGSL type)` in declaration order: the WGSL `struct P`.
    const FIELDS: &'static [(&'static str, &'static str)];
}

/// Declares a params struct: `params! { /// doc  struct RowsParams { rows: u32, n: u32 } }`
/// makes a `#[repr(C)]` `Pod` struct (fields `u32`, `i32` or `f32`, so no padding) and
/// its [`Params`] impl, from which the WGSL `struct P` is written.
macro_rules! params {
    ($(#[$m:meta])* struct $name:ident { $($(#[$fm:meta])* $f:ident: $t:ident),+ $(,)? }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, ::bytemuck::Pod, ::bytemuck::Zeroable)]
        pub(crate) struct $name {
            $($(#[$fm])* pub(crate) $f: $t,)+
        }
        impl $crate::spec::Params for $name {
            const FIELDS: &'static [(&'static str, &'static str)] =
                &[$((stringify!($f), <$t as $crate::spec::WgslScalar>::WGSL)),+];
        }
    };
}
pub(crate) use params;

/// One storage binding of a kernel: `(name, WGSL type)`, e.g. `Slot::Read("x", "array<T>")`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// `var<storage, read>`.
    Read(&'static str, &'static str),
    /// `var<storage, read_write>`.
    ReadWrite(&'static str, &'static str),
}

/// The slots of a kernel that reads `x` and writes `out`, both arrays of `ty`.
const fn x_to_out(ty: &'static str) -> [Slot; 2] {
    [Slot::Read("x", ty), Slot::ReadWrite("out", ty)]
}

/// [`x_to_out`] of f32s, the most common pair.
pub(crate) const F32_X_TO_OUT: &[Slot] = &x_to_out("array<f32>");
/// [`x_to_out`] of 32-bit words.
pub(crate) const U32_X_TO_OUT: &[Slot] = &x_to_out("array<u32>");
/// [`x_to_out`] of `vec4<f32>`s.
pub(crate) const VEC4_X_TO_OUT: &[Slot] = &x_to_out("array<vec4<f32>>");
/// [`x_to_out`] of word pairs (four f16 values each).
pub(crate) const VEC2U_X_TO_OUT: &[Slot] = &x_to_out("array<vec2<u32>>");

/// The declarations of a kernel: its params type `P` at binding 0, then its slots
/// (`S`: a static list, or one chosen per generated variant, as matmul's).
/// Generated variants that share a [`Spec`]'s interface write the same declarations
/// through [`Layout::declarations`].
#[derive(Debug)]
pub(crate) struct Layout<P, S = &'static [Slot]> {
    slots: S,
    params: PhantomData<fn() -> P>,
}

impl<P: Params> Layout<P> {
    /// The layout of params `P` and these slots.
    pub(crate) const fn new(slots: &'static [Slot]) -> Self {
        Layout::with_slots(slots)
    }
}

impl<P: Params, S: AsRef<[Slot]>> Layout<P, S> {
    /// The layout of params `P` and slots chosen at run time.
    pub(crate) const fn with_slots(slots: S) -> Self {
        Layout {
            slots,
            params: PhantomData,
        }
    }

    /// `struct P { .. }` and the `@group(0) @binding(i)` lines.
    pub(crate) fn declarations(&self) -> String {
        let fields: Vec<String> = P::FIELDS.iter().map(|(f, t)| format!("{f}: {t}")).collect();
        let mut s = format!(
            "struct P {{ {} }}\n@group(0) @binding(0) var<uniform> p: P;\n",
            fields.join(", ")
        );
        for (i, slot) in self.slots.as_ref().iter().enumerate() {
            let (access, name, ty) = match slot {
                Slot::Read(n, t) => ("read", n, t),
                Slot::ReadWrite(n, t) => ("read_write", n, t),
            };
            s.push_str(&format!(
                "@group(0) @binding({}) var<storage, {access}> {name}: {ty};\n",
                i + 1
            ));
        }
        s
    }

    /// Records a dispatch of `kernel` (written with these declarations): `params` at
    /// binding 0, `tensors[i]` at binding `i + 1` with the kind of slot `i`.
    ///
    /// # Errors
    /// [`Error::Arity`] when `tensors` does not match the slots (a bug of the caller);
    /// otherwise as [`Device::dispatch_raw`](crate::Device::dispatch_raw).
    pub(crate) fn dispatch(
        &self,
        kernel: &RawKernel,
        constants: &[(&str, f64)],
        params: &P,
        tensors: &[&Tensor],
        workgroups: [u32; 3],
    ) -> Result<(), Error> {
        let slots = self.slots.as_ref();
        if tensors.len() != slots.len() {
            return Err(Error::Arity {
                op: kernel.name().into(),
                what: "tensor bindings",
                expected: slots.len(),
                got: tensors.len(),
            });
        }
        let Some(dev) = tensors.first().map(|t| t.device()) else {
            return Err(Error::Arity {
                op: kernel.name().into(),
                what: "tensor bindings",
                expected: 1,
                got: 0,
            });
        };
        let mut bindings = Vec::with_capacity(1 + tensors.len());
        bindings.push(Binding::Uniform(bytemuck::bytes_of(params)));
        for (slot, t) in slots.iter().zip(tensors) {
            bindings.push(match slot {
                Slot::Read(..) => Binding::Read(t),
                Slot::ReadWrite(..) => Binding::ReadWrite(t),
            });
        }
        dev.dispatch_raw(kernel, constants, &bindings, workgroups)
    }
}

/// A kernel's name and WGSL text, as the registry lists it for validation.
pub(crate) type Source = (String, String);

/// A module that holds kernels: its name and its `kernels()` (every kernel it can
/// produce), as [`kernel_modules!`] lists them.
pub(crate) type KernelModule = (&'static str, fn() -> Vec<Source>);

/// The registry of a folder of kernel modules, written in its `mod.rs`:
/// `kernel_modules! { "ops/rows": softmax, norm, ... }` lists the modules that hold
/// kernels (each with its `kernels()`, every kernel it can produce) and declares the
/// folder's own `kernels()`, every kernel of the listed modules in order (so a folder is a
/// module with kernels to the registry one level up; `kernel_modules! { fn registry,
/// "ops": ... }` names it otherwise, and `ops`'s is the list the naga test validates), and a test that fails when a module of `src/<folder>` defines `kernels()`
/// but is not listed, so the naga test cannot miss its kernels.
macro_rules! kernel_modules {
    ($dir:literal: $($module:ident),+ $(,)?) => {
        $crate::spec::kernel_modules! { fn kernels, $dir: $($module),+ }
    };
    (fn $registry:ident, $dir:literal: $($module:ident),+ $(,)?) => {
        const KERNEL_MODULES: &[$crate::spec::KernelModule] =
            &[$((stringify!($module), $module::kernels)),+];

        /// Every kernel the modules of this folder can produce, as `(name, WGSL)`
        /// (generated families by a representative set).
        pub(crate) fn $registry() -> Vec<$crate::spec::Source> {
            KERNEL_MODULES.iter().flat_map(|(_, kernels)| kernels()).collect()
        }

        #[cfg(test)]
        #[test]
        fn every_module_with_kernels_is_registered() {
            $crate::spec::assert_every_kernel_module_listed($dir, KERNEL_MODULES);
        }
    };
}
pub(crate) use kernel_modules;

/// Panics unless every module of `src/<dir>` whose source (its file, or its folder)
/// defines `fn kernels()` is listed in `modules`: the check that keeps a registry from
/// missing a module, so the naga test cannot miss its kernels.
#[cfg(test)]
pub(crate) fn assert_every_kernel_module_listed(dir: &str, modules: &[KernelModule]) {
    fn defines(path: &std::path::Path) -> bool {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).expect("read a source folder");
            return entries.flatten().any(|e| defines(&e.path()));
        }
        std::fs::read_to_string(path).is_ok_and(|s| s.contains("fn kernels()"))
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(dir);
    for entry in std::fs::read_dir(&root).expect("read src").flatten() {
        let path = entry.path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        // A module is a file (not `mod.rs`) or a folder with a `mod.rs`.
        let module = (path.extension().is_some_and(|e| e == "rs") && stem != "mod")
            || path.join("mod.rs").is_file();
        if module && (defines(&path) || defines(&root.join(stem))) {
            assert!(
                modules.iter().any(|(name, _)| *name == stem),
                "{dir}::{stem} defines kernels() but its registry does not list it"
            );
        }
    }
}

/// A 2-D grid of `groups` workgroups (x at most the device's per-dimension limit), for
/// kernels that index with `group_index`.
pub(crate) fn grid(dev: &Device, op: &str, groups: u64) -> Result<[u32; 3], Error> {
    let maxd = u64::from(dev.info().limits.max_compute_workgroups_per_dimension).max(1);
    let x = groups.clamp(1, maxd);
    let y = groups.div_ceil(x).max(1);
    if y > maxd {
        return Err(Error::TooLarge {
            what: format!("{op}: workgroups"),
            requested: groups,
            limit: maxd * maxd,
        });
    }
    Ok([x as u32, y as u32, 1])
}

/// Launches `kernel` (with override `constants`) with one 256-thread workgroup per 256 of
/// `total` threads (none for 0).
pub(crate) fn launch_threads<P: Params>(
    op: &str,
    dev: &Device,
    kernel: &Spec<P>,
    constants: &[(&str, f64)],
    params: &P,
    total: u32,
    tensors: &[&Tensor],
) -> Result<(), Error> {
    if total == 0 {
        return Ok(());
    }
    let groups = grid(
        dev,
        op,
        u64::from(total).div_ceil(u64::from(crate::size::WG)),
    )?;
    kernel.dispatch(constants, params, tensors, groups)
}

/// A hand-written kernel: name, preludes, layout and body (see the module docs). Lives in
/// a `static`; its text is assembled, validated and leaked on first use.
#[derive(Debug)]
pub(crate) struct Spec<P> {
    name: &'static str,
    prelude: &'static [&'static str],
    layout: Layout<P>,
    body: &'static str,
    kernel: OnceLock<&'static RawKernel>,
}

impl<P: Params> Spec<P> {
    /// A kernel named `name`: `prelude` pieces, then the declarations of `P` and `slots`,
    /// then `body`; entry point `main`.
    pub(crate) const fn new(
        name: &'static str,
        prelude: &'static [&'static str],
        slots: &'static [Slot],
        body: &'static str,
    ) -> Self {
        Spec {
            name,
            prelude,
            layout: Layout::new(slots),
            body,
            kernel: OnceLock::new(),
        }
    }

    /// The WGSL text.
    pub(crate) fn text(&self) -> String {
        let mut s: String = self.prelude.concat();
        s.push('\n');
        s.push_str(&self.layout.declarations());
        s.push_str(self.body);
        s
    }

    /// The name and text, for the registry.
    pub(crate) fn source(&self) -> Source {
        (self.name.to_string(), self.text())
    }

    /// The kernel, validated and created on first use.
    ///
    /// # Errors
    /// [`Error::Shader`] when the text fails naga validation (a bug of this crate).
    pub(crate) fn kernel(&self) -> Result<&'static RawKernel, Error> {
        if let Some(k) = self.kernel.get() {
            return Ok(k);
        }
        let k = intern(self.name, self.text())?;
        Ok(self.kernel.get_or_init(|| k))
    }

    /// The layout, for generated variants that share this kernel's interface.
    pub(crate) fn layout(&self) -> &Layout<P> {
        &self.layout
    }

    /// Records a dispatch: `params` at binding 0, `tensors` in slot order, override
    /// `constants`.
    ///
    /// # Errors
    /// As [`Layout::dispatch`] and [`Spec::kernel`].
    pub(crate) fn dispatch(
        &self,
        constants: &[(&str, f64)],
        params: &P,
        tensors: &[&Tensor],
        workgroups: [u32; 3],
    ) -> Result<(), Error> {
        self.layout
            .dispatch(self.kernel()?, constants, params, tensors, workgroups)
    }
}

/// Every kernel text this process has created, by text: each validated and leaked once.
static TEXTS: Mutex<BTreeMap<&'static str, &'static RawKernel>> = Mutex::new(BTreeMap::new());

/// The kernel for `text` (entry point `main`): validated by naga the first time this
/// process sees the text (outside the lock), then leaked once and shared. This is the one
/// place a kernel text becomes `'static`; the leak is bounded by the number of distinct
/// texts the crate can produce (the registry of `ops/mod.rs` lists them).
///
/// # Errors
/// [`Error::Shader`] when naga rejects the text (a bug of this crate).
pub(crate) fn intern(name: &str, text: String) -> Result<&'static RawKernel, Error> {
    // A poisoned lock only means a thread panicked elsewhere; the map stays consistent
    // (insertion is one step).
    let texts = || TEXTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = texts().get(text.as_str()) {
        return Ok(k);
    }
    tang_expr::validate(&text).map_err(|mut e| {
        e.message = format!("kernel `{name}`: {}", e.message);
        Error::Shader(tang_expr::ExprError::Invalid(e))
    })?;
    let mut map = texts();
    if let Some(k) = map.get(text.as_str()) {
        return Ok(k);
    }
    let text: &'static str = Box::leak(text.into_boxed_str());
    let name: &'static str = Box::leak(name.to_string().into_boxed_str());
    let kernel: &'static RawKernel = Box::leak(Box::new(RawKernel::own(name, text, "main")));
    map.insert(text, kernel);
    Ok(kernel)
}

/// A cache of kernels generated at run time, keyed by what selects the variant (a tile
/// shape, a team size): `static CACHE: Variants<Key> = Variants::new();`. Generation and
/// validation run outside the lock; two threads racing on one key share one kernel.
#[derive(Debug)]
pub(crate) struct Variants<K> {
    map: Mutex<BTreeMap<K, &'static RawKernel>>,
}

impl<K: Ord + Clone> Variants<K> {
    /// An empty cache.
    pub(crate) const fn new() -> Self {
        Variants {
            map: Mutex::new(BTreeMap::new()),
        }
    }

    /// The kernel of `key`; on first use `generate` gives its `(name, text)`.
    ///
    /// # Errors
    /// As [`intern`].
    pub(crate) fn get(
        &self,
        key: &K,
        generate: impl FnOnce() -> (String, String),
    ) -> Result<&'static RawKernel, Error> {
        let map = || self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = map().get(key) {
            return Ok(k);
        }
        let (name, text) = generate();
        let kernel = intern(&name, text)?;
        Ok(*map().entry(key.clone()).or_insert(kernel))
    }
}
