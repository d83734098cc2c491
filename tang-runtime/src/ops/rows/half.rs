//! The f16 forms of the row and reduction kernels: the same WGSL as the f32 kernel, with
//! each binding that holds an f16 tensor read and written through conversions, so the
//! arithmetic stays f32 (PyTorch's accumulation for `torch.float16`) and the f32 kernels
//! are untouched, byte for byte.
//!
//! f16 tensors are bits in 32-bit words, two elements a word (see [`crate::DType::F16`]).
//! The form of a kernel is derived from its text: the binding's type becomes words
//! (`array<vec2<u32>>` for a `vec4` unit: four halves, `array<u32>` for an `f32` unit or
//! an `array<f32>` binding), every read `x[i]` becomes `ld_x(i)` (widened, exact) and every
//! write `y[i] = v;` becomes `st_y(i, v);` (rounded to nearest even, once).
//!
//! Writes: a thread must own the whole words it writes (WGSL has no 16-bit stores, and two
//! threads writing the halves of one word race). A `vec4` unit is four halves, two whole
//! words at a word boundary, so a kernel over rows of a multiple of 4 stores f16 directly.
//! With `f32` units neighbouring units (other threads, or the first element of the next
//! row when a row is of odd length) share words: there the caller keeps the output f32 and
//! rounds it to f16 in one pass of `to_dtype`, whose threads each write a whole word
//! ([`out_dtype`] says which). Either way each value is rounded once.

use crate::ops::matmul::elem::elem_helpers;
use crate::spec::{Layout, Params, Source, Spec, Variants};
use crate::wgsl_rewrite::{bindings, rewrite, writes};
use crate::{DType, Error, RawKernel, Tensor};

/// The unit prelude of `vec4` kernels (`wgsl::unit_v4` and the reductions' backward).
const V4_UNIT: &str = "alias T = vec4<f32>;";

/// The element type a row kernel writes an output of `dtype` in, for rows whose length is
/// (`vec4`) or is not a multiple of 4: f16 only where every thread writes whole words.
pub(crate) fn out_dtype(dtype: DType, vec4: bool) -> DType {
    if dtype == DType::F16 && vec4 {
        DType::F16
    } else {
        DType::F32
    }
}

/// The f16 kernel of `base` for these `tensors` (bound in slot order): `base` itself when
/// none is f16, else its f16 form with the bindings of the f16 tensors converted,
/// generated and validated once per process.
///
/// # Errors
/// [`Error::DType`] when an f16 tensor is bound where the kernel cannot hold one: an
/// integer binding, or one it writes with `f32` units (the caller writes f32 there, see
/// [`out_dtype`]); [`Error::Shader`] when the form fails validation (a bug of this crate).
pub(crate) fn form(
    base: &'static RawKernel,
    tensors: &[&Tensor],
) -> Result<&'static RawKernel, Error> {
    if tensors.iter().all(|t| t.dtype() != DType::F16) {
        return Ok(base);
    }
    let text = base.wgsl();
    let halves: Vec<(&'static str, &'static str)> = bindings(text)
        .into_iter()
        .zip(tensors)
        .filter(|(_, t)| t.dtype() == DType::F16)
        .map(|(binding, _)| binding)
        .collect();
    if !halves.iter().all(|&(n, ty)| convertible(text, n, ty)) {
        return Err(Error::DType {
            op: base.name().into(),
            expected: DType::F32,
            got: DType::F16,
        });
    }
    let halves: Vec<&'static str> = halves.into_iter().map(|(n, _)| n).collect();
    static FORMS: Variants<(u64, Vec<&'static str>)> = Variants::new();
    FORMS.get(&(base.id(), halves.clone()), || {
        (format!("{}_f16", base.name()), half_text(text, &halves))
    })
}

/// Records `kernel` (written with `layout`'s declarations) over `tensors` in slot order,
/// in its f16 form where a tensor is f16 (see [`form`]).
///
/// # Errors
/// As [`form`] and [`Layout::dispatch`].
pub(crate) fn dispatch<P: Params>(
    layout: &Layout<P>,
    kernel: &'static RawKernel,
    constants: &[(&str, f64)],
    params: &P,
    tensors: &[&Tensor],
    workgroups: [u32; 3],
) -> Result<(), Error> {
    layout.dispatch(
        form(kernel, tensors)?,
        constants,
        params,
        tensors,
        workgroups,
    )
}

/// Records `spec`'s kernel over `tensors`, in its f16 form where a tensor is f16.
///
/// # Errors
/// As [`dispatch`] and [`Spec::kernel`].
pub(crate) fn dispatch_spec<P: Params>(
    spec: &Spec<P>,
    constants: &[(&str, f64)],
    params: &P,
    tensors: &[&Tensor],
    workgroups: [u32; 3],
) -> Result<(), Error> {
    dispatch(
        spec.layout(),
        spec.kernel()?,
        constants,
        params,
        tensors,
        workgroups,
    )
}

/// The f16 form of `source` with every binding f16 that its unit allows (all of them with
/// `vec4` units, the read-only ones with `f32` units), for the registry's validation.
pub(crate) fn registry_form((name, text): Source) -> Source {
    let halves: Vec<&str> = bindings(&text)
        .into_iter()
        .filter(|&(n, ty)| convertible(&text, n, ty))
        .map(|(n, _)| n)
        .collect();
    let form = half_text(&text, &halves);
    (format!("{name}_f16"), form)
}

/// Whether binding `name` of WGSL type `ty` may hold an f16 tensor in `text`'s f16 form:
/// a float binding that the kernel only reads, or writes in whole words (`vec4` units; see
/// the module docs).
fn convertible(text: &str, name: &str, ty: &str) -> bool {
    let unit = ty.starts_with("array<T>");
    (unit || ty == "array<f32>") && (!writes(text, name) || (unit && text.contains(V4_UNIT)))
}

/// The f16 form of `text` with bindings `halves` in f16 (see the module docs).
fn half_text(text: &str, halves: &[&str]) -> String {
    let v4 = text.contains(V4_UNIT);
    let mut out = text.to_string();
    let mut helpers = elem_helpers();
    helpers.push_str(
        "fn pack_f16x4(v: vec4<f32>) -> vec2<u32> {
    let b = bitcast<vec4<u32>>(v);
    return vec2<u32>(f32_to_f16_bits(b.x) | (f32_to_f16_bits(b.y) << 16u),
                     f32_to_f16_bits(b.z) | (f32_to_f16_bits(b.w) << 16u));
}
",
    );
    for &name in halves {
        let Some((_, ty)) = bindings(&out).into_iter().find(|(n, _)| *n == name) else {
            continue;
        };
        let unit = ty.starts_with("array<T>");
        let words = if unit && v4 {
            "array<vec2<u32>>"
        } else {
            "array<u32>"
        };
        let written = writes(&out, name);
        let decl = (format!("> {name}: {ty};"), format!("> {name}: {words};"));
        out = rewrite(&out.replacen(&decl.0, &decl.1, 1), name);
        // Added after the rewrite: the helpers' own accesses stay raw.
        helpers.push_str(&if unit && v4 {
            let store = if written {
                format!("fn st_{name}(i: u32, v: T) {{ {name}[i] = pack_f16x4(v); }}\n")
            } else {
                String::new()
            };
            format!("fn ld_{name}(i: u32) -> T {{ return widen_f16x4({name}[i]); }}\n{store}")
        } else {
            let ret = if unit { "T" } else { "f32" };
            format!("fn ld_{name}(i: u32) -> {ret} {{ return widen_f16({name}[i >> 1u], i); }}\n")
        });
    }
    out.push('\n');
    out.push_str(&helpers);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_become_conversions_and_other_names_stay() {
        let text = "let v = x[base + u[k]]; dx[i] = v; y[i] = f(x[j], (y[0] == 1.0));";
        assert_eq!(
            rewrite(&rewrite(text, "x"), "y"),
            "let v = ld_x(base + u[k]); dx[i] = v; st_y(i, f(ld_x(j), (ld_y(0) == 1.0)));"
        );
        assert!(writes(text, "y") && writes(text, "dx"));
        assert!(!writes(text, "x") && !writes("if (y[0] == 1.0) {}", "y"));
    }

    #[test]
    fn forms_convert_only_what_the_unit_allows() {
        let head = "alias T = f32;\n@group(0) @binding(1) var<storage, read> x: array<T>;\n\
                    @group(0) @binding(2) var<storage, read_write> y: array<T>;\n";
        let text = format!("{head}fn main() {{ y[0] = x[1]; }}\n");
        // Scalar units: `y` shares words between threads, so it stays f32.
        let (_, form) = registry_form(("k".into(), text.clone()));
        assert!(form.contains("> x: array<u32>;") && form.contains("> y: array<T>;"));
        assert!(form.contains("y[0] = ld_x(1);"));
        // vec4 units: four halves are two whole words, written by one thread.
        let v4 = text.replace("alias T = f32;", V4_UNIT);
        let (_, form) = registry_form(("k".into(), v4));
        assert!(form.contains("> y: array<vec2<u32>>;") && form.contains("st_y(0, ld_x(1));"));
        assert!(form.contains("fn st_y(i: u32, v: T) { y[i] = pack_f16x4(v); }"));
    }
}
