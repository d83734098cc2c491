//! Checking a kernel's signature: parameter kinds, return shape, `#[fused_grad]` options.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::{FnArg, Ident, Pat, ReturnType, Token, Type};

use super::Mode;
use super::errors::Errors;

/// How a parameter reaches the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// `x: f32`: one value per element, read-only.
    Input,
    /// `#[uniform] x: f32`: one value for the whole launch.
    Uniform,
    /// `x: &mut f32`: read and written in place.
    InOut,
}

/// One checked parameter.
#[derive(Clone, Debug)]
pub(crate) struct Param {
    pub ident: Ident,
    pub name: String,
    pub kind: ParamKind,
    /// Declared `mut x: f32` (a by-value parameter the body may reassign).
    pub mutable: bool,
}

/// What the function returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ret {
    /// `()` (only in-place updates).
    Unit,
    /// One `f32`: the output `out`.
    Scalar,
    /// A tuple of `n` floats: outputs `out0 .. out{n-1}`.
    Tuple(usize),
}

impl Ret {
    /// The names of the outputs, in order, from `base` (`out`): `base`, or `base0, base1,
    /// ...` for a tuple.
    pub(crate) fn output_names(self, base: &str) -> Vec<String> {
        match self {
            Ret::Unit => Vec::new(),
            Ret::Scalar => vec![base.to_string()],
            Ret::Tuple(n) => (0..n).map(|i| format!("{base}{i}")).collect(),
        }
    }
}

/// A checked signature.
#[derive(Clone, Debug)]
pub(crate) struct Sig {
    pub ident: Ident,
    pub params: Vec<Param>,
    pub ret: Ret,
    /// Names of parameters that were rejected (bound to nothing in the body, silently, so
    /// their uses add no errors).
    pub rejected: Vec<String>,
    /// The inputs `#[fused_grad]` differentiates with respect to, as indices into the
    /// by-value inputs (in order); empty for `#[kernel]`.
    pub wrt: Vec<u32>,
}

impl Sig {
    /// The names of the outputs: `out` (or `out0, out1, ...`), with `_` appended while a
    /// parameter already has one of them or of the names derived from them (`g_<out>`,
    /// `d_<out>_<x>`), so every parameter name that is a valid identifier can be used.
    pub(crate) fn output_names(&self) -> Vec<String> {
        let taken = |n: &str| {
            self.params.iter().any(|p| p.name == n) || self.rejected.iter().any(|r| r == n)
        };
        let mut base = String::from("out");
        loop {
            let names = self.ret.output_names(&base);
            let clash = names.iter().any(|o| {
                taken(o)
                    || taken(&format!("g_{o}"))
                    || self
                        .params
                        .iter()
                        .any(|p| taken(&format!("d_{o}_{}", p.name)))
            });
            if !clash {
                return names;
            }
            base.push('_');
        }
    }

    /// The by-value inputs, in order.
    pub(crate) fn inputs(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.kind == ParamKind::Input)
    }
    /// The uniforms, in order.
    pub(crate) fn uniforms(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.kind == ParamKind::Uniform)
    }
    /// The in-out parameters, in order.
    pub(crate) fn inouts(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.kind == ParamKind::InOut)
    }
}

/// Lint attributes rustc accepts on parameters; they are kept as written.
pub(crate) fn is_lint_attr(attr: &syn::Attribute) -> bool {
    let p = attr.path();
    ["allow", "warn", "deny", "forbid", "expect"]
        .iter()
        .any(|l| p.is_ident(l))
}

/// Whether `attr` is `#[uniform]`.
pub(crate) fn is_uniform_attr(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("uniform")
}

/// Whether `ty` is exactly `f32`.
pub(crate) fn is_f32(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p.qself.is_none() && p.path.is_ident("f32"),
        Type::Paren(p) => is_f32(&p.elem),
        Type::Group(g) => is_f32(&g.elem),
        _ => false,
    }
}

/// Why a non-`f32` type is rejected, and what to write instead.
pub(crate) fn type_problem(ty: &Type) -> String {
    let shown = ty.to_token_stream().to_string().replace("& ", "&");
    match ty {
        Type::Path(p) if p.path.is_ident("f64") => {
            "`f64` is not supported: kernels compute in `f32` (GPUs have no fast f64); use `f32`"
                .to_string()
        }
        Type::Path(p)
            if [
                "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128",
                "usize",
            ]
            .iter()
            .any(|t| p.path.is_ident(t)) =>
        {
            format!(
                "integer type `{shown}` is not supported: kernels take `f32` values (pass \
                 integers as floats)"
            )
        }
        Type::Path(p) if p.path.is_ident("bool") => {
            "`bool` is not supported here: kernels take `f32` values (pass a flag as 0.0 or 1.0)"
                .to_string()
        }
        Type::Reference(_) => format!(
            "reference type `{shown}` is not supported: the only reference a kernel takes is \
             `&mut f32` (an in-place parameter); take other values by value as `f32`"
        ),
        _ => format!(
            "type `{shown}` is not supported: kernel parameters are `f32`, `#[uniform] f32` \
             or `&mut f32`"
        ),
    }
}

/// Checks a parameter list and return type. Errors go to `errors`; the parameters that
/// could be understood are returned either way so the body can still be checked.
pub(crate) fn check_signature(
    sig: &syn::Signature,
    mode: &Mode,
    wrt: &[Ident],
    errors: &mut Errors,
) -> Sig {
    check_header(sig, errors);
    let mut params: Vec<Param> = Vec::new();
    let mut rejected = Vec::new();
    for arg in &sig.inputs {
        match check_param(arg, &params, errors) {
            Checked::Param(p) => params.push(p),
            Checked::Rejected(name) => rejected.push(name),
            Checked::Dropped => {}
        }
    }

    let before = errors.count();
    let ret = match &sig.output {
        ReturnType::Default => Ret::Unit,
        ReturnType::Type(_, ty) => check_return(ty, errors),
    };
    // A rejected return type is reported once, not again as "writes nothing".
    let ret_ok = errors.count() == before;

    let wrt_idx = match mode {
        Mode::FusedGrad => check_fused_grad(sig, &params, ret, ret_ok, wrt, errors),
        Mode::Kernel => Vec::new(),
    };
    check_has_effect(sig, mode, &params, ret, ret_ok, errors);
    Sig {
        ident: sig.ident.clone(),
        params,
        ret,
        rejected,
        wrt: wrt_idx,
    }
}

/// The qualifiers a kernel cannot have: `async`, `unsafe`, an ABI, generics, `where`,
/// variadics.
fn check_header(sig: &syn::Signature, errors: &mut Errors) {
    if let Some(a) = &sig.asyncness {
        errors.at(
            a,
            "`async fn` cannot be a kernel: a kernel runs to completion on the GPU; remove `async`",
        );
    }
    if let syn::Safety::Unsafe(u) = &sig.safety {
        errors.at(
            u,
            "`unsafe fn` cannot be a kernel: kernels are safe by construction; remove `unsafe`",
        );
    }
    if let Some(abi) = &sig.abi {
        errors.at(
            abi,
            "an `extern` ABI is not supported on a kernel: remove it",
        );
    }
    const GENERIC: &str = "generic kernels are not supported: write the function over `f32` \
                           (a kernel is compiled once, to one shader)";
    if !sig.generics.params.is_empty() {
        errors.at(&sig.generics, GENERIC);
    }
    // `Generics` prints without its `where` clause: point at the clause itself.
    if let Some(w) = &sig.generics.where_clause {
        errors.at(
            w,
            "`where` clauses are not supported on kernels: write the function over `f32` (a \
             kernel is compiled once, to one shader)",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.at(v, "variadic parameters are not supported in a kernel");
    }
}

/// What became of one parameter.
enum Checked {
    /// A usable parameter.
    Param(Param),
    /// A named parameter whose type or name is rejected: the body may still use the name,
    /// and those uses are not reported again.
    Rejected(String),
    /// Reported and left out (a receiver, a pattern, a duplicate).
    Dropped,
}

/// Checks one parameter against those before it (`params`).
fn check_param(arg: &FnArg, params: &[Param], errors: &mut Errors) -> Checked {
    let pt = match arg {
        FnArg::Receiver(r) => {
            errors.at(
                r,
                "a method cannot be a kernel: write a free function over `f32` parameters",
            );
            return Checked::Dropped;
        }
        FnArg::Typed(pt) => pt,
    };
    let uniform = check_param_attrs(pt, errors);
    let (ident, mutable) = match &*pt.pat {
        Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
            (pi.ident.clone(), pi.mutability.is_some())
        }
        Pat::Wild(w) => {
            errors.at(
                w,
                "a kernel parameter needs a name (it names the kernel's input): write `x: f32`",
            );
            return Checked::Dropped;
        }
        other => {
            errors.at(
                other,
                "patterns are not supported in kernel parameters: write `x: f32`",
            );
            return Checked::Dropped;
        }
    };
    let kind = match &*pt.ty {
        t if is_f32(t) => {
            if uniform {
                ParamKind::Uniform
            } else {
                ParamKind::Input
            }
        }
        Type::Reference(r) if r.mutability.is_some() && is_f32(&r.elem) => {
            if uniform {
                errors.at(
                    &pt.ty,
                    "`#[uniform]` marks an `f32` parameter (one value for the whole launch); \
                     an in-place `&mut f32` parameter cannot be uniform: write \
                     `#[uniform] x: f32`",
                );
            }
            ParamKind::InOut
        }
        other => {
            errors.at(other, type_problem(other));
            return Checked::Rejected(ident.to_string());
        }
    };
    let name = ident.to_string();
    if let Some(why) = unusable_name(&ident.unraw().to_string()) {
        errors.at(&ident, why);
        return Checked::Rejected(name);
    }
    if params.iter().any(|p| p.name == name) {
        errors.at(&ident, format!("parameter `{name}` is declared twice"));
        return Checked::Dropped;
    }
    Checked::Param(Param {
        ident,
        name,
        kind,
        mutable,
    })
}

/// A parameter's attributes: whether it is `#[uniform]`; anything but that and lint
/// attributes is reported.
fn check_param_attrs(pt: &syn::PatType, errors: &mut Errors) -> bool {
    let mut uniform = false;
    for attr in &pt.attrs {
        if is_uniform_attr(attr) {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                errors.at(
                    attr,
                    "`#[uniform]` takes no arguments: write `#[uniform] x: f32`",
                );
            }
            uniform = true;
        } else if !is_lint_attr(attr) {
            let name = attr.path().to_token_stream().to_string().replace(' ', "");
            errors.at(
                attr,
                format!(
                    "unknown parameter attribute `#[{name}]`: the only kernel parameter \
                     attribute is `#[uniform]` (one value for the whole launch)"
                ),
            );
        }
    }
    uniform
}

/// What `#[fused_grad]` asks beyond `#[kernel]`: no in-place parameters, a returned value,
/// and a `wrt(...)` list of by-value inputs. Returns the differentiated inputs' indices
/// among the inputs, in parameter order.
fn check_fused_grad(
    sig: &syn::Signature,
    params: &[Param],
    ret: Ret,
    ret_ok: bool,
    wrt: &[Ident],
    errors: &mut Errors,
) -> Vec<u32> {
    for p in params {
        if p.kind == ParamKind::InOut {
            errors.at(
                &p.ident,
                format!(
                    "`#[fused_grad]` differentiates returned values; in-place parameter `{}` \
                     is not supported there: return the new value instead, or use `#[kernel]`",
                    p.name
                ),
            );
        }
    }
    if ret == Ret::Unit && ret_ok {
        errors.at(
            &sig.ident,
            "`#[fused_grad]` differentiates the returned value: return an `f32` or a tuple of \
             `f32`",
        );
    }
    let inputs: Vec<&Param> = params
        .iter()
        .filter(|p| p.kind == ParamKind::Input)
        .collect();
    let mut wrt_idx = Vec::new();
    if wrt.is_empty() {
        wrt_idx = (0..inputs.len() as u32).collect();
    }
    for w in wrt {
        match inputs.iter().position(|p| p.ident == *w) {
            Some(i) if !wrt_idx.contains(&(i as u32)) => wrt_idx.push(i as u32),
            Some(_) => errors.at(w, format!("`{w}` is listed twice in `wrt(...)`")),
            None => {
                let why = if params.iter().any(|p| p.ident == *w) {
                    "is not a by-value `f32` input (uniforms and in-place parameters are \
                     not differentiated)"
                } else {
                    "is not a parameter of this function"
                };
                let names: Vec<&str> = inputs.iter().map(|p| p.name.as_str()).collect();
                errors.at(
                    w,
                    format!(
                        "`wrt({w})`: `{w}` {why}; the inputs are: {}",
                        names.join(", ")
                    ),
                );
            }
        }
    }
    // Partials come out in parameter order whatever order `wrt` lists them in.
    wrt_idx.sort_unstable();
    wrt_idx
}

/// That the kernel has something to size its launch by and something to write.
fn check_has_effect(
    sig: &syn::Signature,
    mode: &Mode,
    params: &[Param],
    ret: Ret,
    ret_ok: bool,
    errors: &mut Errors,
) {
    // The launch's length is that of its per-element tensors: with none there is nothing
    // to size it by (and `#[fused_grad]` nothing to differentiate).
    if sig.inputs.len() == params.len()
        && !params
            .iter()
            .any(|p| matches!(p.kind, ParamKind::Input | ParamKind::InOut))
    {
        errors.span(
            sig.paren_token.span.join(),
            "a kernel needs at least one per-element parameter (`x: f32`, or `p: &mut f32` \
             for `#[kernel]`): the launch runs once per element of those tensors; uniforms \
             (`#[uniform] a: f32`) are one value for the whole launch",
        );
    }
    if ret == Ret::Unit
        && ret_ok
        && !params.iter().any(|p| p.kind == ParamKind::InOut)
        && !matches!(mode, Mode::FusedGrad)
        && sig.inputs.len() == params.len()
    {
        errors.at(
            &sig.ident,
            "this kernel writes nothing: return an `f32` (or a tuple of `f32`), or take a \
             `&mut f32` parameter to update in place",
        );
    }
}

fn check_return(ty: &Type, errors: &mut Errors) -> Ret {
    const HELP: &str = "a kernel returns `f32`, a tuple of `f32`, or nothing (`()`)";
    match ty {
        t if is_f32(t) => Ret::Scalar,
        Type::Tuple(t) if t.elems.is_empty() => Ret::Unit,
        Type::Tuple(t) => {
            let mut ok = true;
            for e in &t.elems {
                if !is_f32(e) {
                    errors.at(e, format!("unsupported return type: {HELP}"));
                    ok = false;
                }
            }
            if ok {
                Ret::Tuple(t.elems.len())
            } else {
                Ret::Unit
            }
        }
        Type::Paren(p) => check_return(&p.elem, errors),
        other => {
            errors.at(other, format!("unsupported return type: {HELP}"));
            Ret::Unit
        }
    }
}

/// Parses the arguments of `#[kernel]` (none) or `#[fused_grad]` (`wrt(a, b)`, optional).
pub(crate) fn parse_attr(attr: TokenStream, mode: &Mode, errors: &mut Errors) -> Vec<Ident> {
    if attr.is_empty() {
        return Vec::new();
    }
    match mode {
        Mode::Kernel => {
            errors.at(
                &attr,
                "`#[kernel]` takes no arguments (use `#[fused_grad(wrt(x))]` for derivatives)",
            );
            Vec::new()
        }
        Mode::FusedGrad => {
            let parsed = syn::parse::Parser::parse2(
                Punctuated::<syn::Meta, Token![,]>::parse_terminated,
                attr.clone(),
            );
            let metas = match parsed {
                Ok(m) => m,
                Err(e) => {
                    errors.span(
                        e.span(),
                        format!("{e}: `#[fused_grad]` takes `wrt(x, y)` or nothing"),
                    );
                    return Vec::new();
                }
            };
            let mut wrt = Vec::new();
            for meta in metas {
                match meta {
                    syn::Meta::List(list) if list.path.is_ident("wrt") => {
                        match list.parse_args_with(Punctuated::<Ident, Token![,]>::parse_terminated)
                        {
                            Ok(ids) if !ids.is_empty() => wrt.extend(ids),
                            Ok(_) => errors.at(
                                &list,
                                "`wrt()` lists no inputs: name at least one, as in `wrt(x)`",
                            ),
                            Err(e) => errors.span(
                                e.span(),
                                "`wrt(...)` takes parameter names separated by commas: `wrt(x, y)`",
                            ),
                        }
                    }
                    other => errors.at(
                        &other,
                        format!(
                            "unknown `#[fused_grad]` option `{}`: the only option is `wrt(x, y)`",
                            other.path().to_token_stream().to_string().replace(' ', "")
                        ),
                    ),
                }
            }
            wrt
        }
    }
}

/// Why `name` cannot name a kernel parameter, if it cannot: it names a WGSL binding, so it
/// must be ASCII, and `__` starts the names of tang's generated locals.
fn unusable_name(name: &str) -> Option<String> {
    if !name.is_ascii() {
        return Some(format!(
            "`{name}` cannot name a kernel parameter: it names a buffer of the WGSL shader, \
             which takes ASCII identifiers; rename it"
        ));
    }
    if name.starts_with("__") {
        return Some(format!(
            "`{name}` cannot name a kernel parameter: names starting with `__` are reserved \
             for the generated code; rename it"
        ));
    }
    None
}
