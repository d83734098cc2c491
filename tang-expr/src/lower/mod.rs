//! Compile-time lowering of Rust functions to kernels: what `#[kernel]`, `#[fused_grad]`
//! and `#[kernels] mod` do, as a library (so it can be tested without a compiler).
//!
//! [`expand_kernel`] and [`expand_kernels`] take the macro's attribute and item tokens and
//! return the expansion. They never panic and always return tokens: the function and the
//! items generated beside it, or, when something is not supported, the function's signature
//! with a body that does nothing (so rustc reports nothing twice) followed by one
//! `compile_error!` per problem, each spanned at the offending code, all reported at once.
//!
//! The pipeline for one function: check the signature, lower the body to a
//! [`Graph`](crate::Graph) (every node remembers the span of the expression it came
//! from), simplify, differentiate for `#[fused_grad]`, emit WGSL and validate it with naga
//! ([`crate::emit_elementwise`], [`crate::fused_grad_kernels`]), then generate the Rust
//! items (`WGSL`, `KERNEL`, `launch`, and `GRAD`, `VJP`, `launch_grad`, `launch_vjp`,
//! `grad`, `vjp`). The language accepted is documented in the `tang-macros` crate.
//!
//! ```
//! use tang_expr::lower::{Mode, compile_kernel};
//!
//! let item: proc_macro2::TokenStream = "fn square(x: f32) -> f32 { x * x }".parse().unwrap();
//! let done = compile_kernel(Default::default(), item, Mode::FusedGrad).unwrap();
//! assert_eq!(done.kernels.len(), 3); // value, GRAD, VJP
//! assert!(done.tokens.to_string().contains("pub fn grad"));
//! ```

mod assign;
mod body;
mod builtins;
mod control;
mod emit;
mod env;
mod errors;
mod expr;
mod guard;
mod locate;
mod sig;
mod site;
mod twin;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::{FnArg, Item, ItemFn};

use self::body::{FnTable, Lowerer};
use self::errors::Errors;
use self::sig::{ParamKind, is_lint_attr};
use crate::codegen::{ElementwiseSpec, emit_elementwise};
use crate::error::ExprError;
use crate::fused::{FusedSpec, fused_grad_kernels};
use crate::kernel::Kernel;
use crate::simplify::simplify;

/// Which macro is expanding a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `#[kernel]`: the value kernel only (`WGSL`, `KERNEL`, `launch`).
    Kernel,
    /// `#[fused_grad]`: also `GRAD`, `VJP`, their launchers and the CPU twins.
    FusedGrad,
}

/// A successfully compiled kernel function.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The expansion: the function (without `#[uniform]` markers) and `mod f { ... }`.
    pub tokens: TokenStream,
    /// The naga-validated kernels: the value kernel, then (for `#[fused_grad]`) GRAD and VJP.
    pub kernels: Vec<Kernel>,
    /// Nodes in the lowered graph before simplification (a measure of the kernel's size).
    pub nodes: usize,
}

/// Compiles one function, as `#[kernel]` (or `#[fused_grad]`, by `mode`) would.
///
/// # Errors
/// Every unsupported construct, as one combined [`syn::Error`] (each part spanned at the
/// offending code), or a shader naga rejects (spanned at the expression that produced it
/// where it can be found, else at the function's name).
pub fn compile_kernel(
    attr: TokenStream,
    item: TokenStream,
    mode: Mode,
) -> Result<Compiled, syn::Error> {
    guard::on_big_stack(|| {
        guard::check_depth(&item)?;
        compile_parsed(attr, item, mode)
    })
}

/// [`compile_kernel`] on input whose depth is checked, already on the big stack.
fn compile_parsed(
    attr: TokenStream,
    item: TokenStream,
    mode: Mode,
) -> Result<Compiled, syn::Error> {
    let f: ItemFn = match syn::parse2::<Item>(item)? {
        Item::Fn(f) => f,
        other => return Err(not_a_function(&other, mode)),
    };
    let mut fns = FnTable::new();
    fns.insert(f.sig.ident.unraw().to_string(), &f);
    // A second kernel attribute would expand the function again (a second `mod f`).
    let mut errors = Errors::default();
    let this = match mode {
        Mode::Kernel => "kernel",
        Mode::FusedGrad => "fused_grad",
    };
    for attr in f.attrs.iter().filter(|a| kernel_macro_name(a).is_some()) {
        let other = kernel_macro_name(attr).unwrap_or_default();
        let msg = if other == this {
            format!("`#[{this}]` is applied twice to this function: remove one")
        } else {
            format!(
                "`#[{this}]` and `#[{other}]` are both applied to this function: a function \
                 takes one of them (`#[fused_grad]` emits everything `#[kernel]` does); remove one"
            )
        };
        errors.at(attr, msg);
    }
    match compile_fn(&f, mode, attr, &fns) {
        Ok(out) if errors.is_empty() => {
            let cleaned = clean(&f);
            let module = out.module;
            Ok(Compiled {
                tokens: quote!(#cleaned #module),
                kernels: out.kernels,
                nodes: out.nodes,
            })
        }
        result => {
            if let Err(e) = result {
                errors.extend(e);
            }
            Err(errors.combined().unwrap_or_else(|| {
                syn::Error::new(f.sig.ident.span(), "kernel compilation failed")
            }))
        }
    }
}

/// `"kernel"` or `"fused_grad"` if `attr` is one of the kernel macros.
fn kernel_macro_name(attr: &syn::Attribute) -> Option<&'static str> {
    let last = attr.path().segments.last()?;
    ["kernel", "fused_grad"]
        .into_iter()
        .find(|name| last.ident == name)
}

/// The expansion of `#[kernel]` / `#[fused_grad]` on `item`: never panics; on error, the
/// function's signature with an unreachable body plus `compile_error!`s.
pub fn expand_kernel(attr: TokenStream, item: TokenStream, mode: Mode) -> TokenStream {
    guard::on_big_stack(|| expand_kernel_here(attr, item, mode))
}

fn expand_kernel_here(attr: TokenStream, item: TokenStream, mode: Mode) -> TokenStream {
    if let Err(e) = guard::check_depth(&item) {
        // Too deep for syn's recursive parser: the item goes back to rustc as it came.
        let errors = e.to_compile_error();
        return quote!(#item #errors);
    }
    match compile_parsed(attr, item.clone(), mode) {
        Ok(done) => done.tokens,
        Err(e) => {
            let original = match syn::parse2::<Item>(item.clone()) {
                Ok(Item::Fn(f)) => stub(&f).into_token_stream(),
                _ => item,
            };
            let errors = e.to_compile_error();
            quote!(#original #errors)
        }
    }
}

/// The expansion of `#[kernels]` on a `mod { ... }`: every function in it marked
/// `#[kernel]` or `#[fused_grad]` is compiled, and may call (inlined) any function of the
/// module. Other items are left as they are.
pub fn expand_kernels(attr: TokenStream, item: TokenStream) -> TokenStream {
    guard::on_big_stack(|| expand_kernels_here(attr, item))
}

fn expand_kernels_here(attr: TokenStream, item: TokenStream) -> TokenStream {
    if let Err(e) = guard::check_depth(&item) {
        let errors = e.to_compile_error();
        return quote!(#item #errors);
    }
    let mut errors = Errors::default();
    if !attr.is_empty() {
        errors.at(&attr, "`#[kernels]` takes no arguments");
    }
    let module: syn::ItemMod = match syn::parse2(item.clone()) {
        Ok(m) => m,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "`#[kernels]` applies to an inline module: `#[kernels] mod name { ... }`",
            )
            .to_compile_error();
            return quote!(#item #e);
        }
    };
    let Some((_, items)) = &module.content else {
        errors.at(
            &module,
            "`#[kernels]` needs the module's items inline: `#[kernels] mod name { ... }`",
        );
        let e = errors.combined().map(|e| e.to_compile_error());
        return quote!(#module #e);
    };
    let mut fns = FnTable::new();
    for it in items {
        if let Item::Fn(f) = it {
            fns.insert(f.sig.ident.unraw().to_string(), f);
        }
    }
    let mut out = TokenStream::new();
    for it in items {
        let Item::Fn(f) = it else {
            it.to_tokens(&mut out);
            continue;
        };
        let Some((mode, attr, rest)) = kernel_attr(f, &mut errors) else {
            f.to_tokens(&mut out);
            continue;
        };
        let (mut emitted, module) = match compile_fn(f, mode, attr, &fns) {
            Ok(done) => (clean(f), done.module),
            Err(e) => {
                errors.extend(e);
                (stub(f), TokenStream::new())
            }
        };
        emitted
            .attrs
            .retain(|a| rest.contains(a) || a.path().is_ident("allow"));
        emitted.to_tokens(&mut out);
        out.extend(module);
    }
    let attrs = &module.attrs;
    let vis = &module.vis;
    let unsafety = &module.unsafety;
    let name = &module.ident;
    let errors = errors.combined().map(|e| e.to_compile_error());
    quote! {
        #(#attrs)* #vis #unsafety mod #name {
            #out
        }
        #errors
    }
}

/// The expansion of `#[uniform]` anywhere the kernel macros did not consume it.
pub fn expand_misplaced_uniform(item: TokenStream) -> TokenStream {
    let e = syn::Error::new(
        Span::call_site(),
        "`#[uniform]` marks a parameter of a `#[kernel]` or `#[fused_grad]` function \
         (`#[uniform] lr: f32`: one value for the whole launch); it cannot be used here",
    )
    .to_compile_error();
    quote!(#item #e)
}

fn not_a_function(item: &Item, mode: Mode) -> syn::Error {
    let name = match mode {
        Mode::Kernel => "kernel",
        Mode::FusedGrad => "fused_grad",
    };
    syn::Error::new_spanned(
        item,
        format!("`#[{name}]` applies to a function: `#[{name}] fn f(x: f32) -> f32 {{ ... }}`"),
    )
}

/// Which kernel macro marks `f` inside a `#[kernels] mod`, its arguments, and `f`'s other
/// attributes.
fn kernel_attr(
    f: &ItemFn,
    errors: &mut Errors,
) -> Option<(Mode, TokenStream, Vec<syn::Attribute>)> {
    let mut found = None;
    let mut rest = Vec::new();
    for attr in &f.attrs {
        let last = attr.path().segments.last().map(|s| s.ident.to_string());
        let mode = match last.as_deref() {
            Some("kernel") => Mode::Kernel,
            Some("fused_grad") => Mode::FusedGrad,
            _ => {
                rest.push(attr.clone());
                continue;
            }
        };
        let args = match &attr.meta {
            syn::Meta::Path(_) => TokenStream::new(),
            syn::Meta::List(l) => l.tokens.clone(),
            syn::Meta::NameValue(nv) => {
                errors.at(nv, "write `#[fused_grad(wrt(x))]`, not `= ...`");
                TokenStream::new()
            }
        };
        if found.is_some() {
            errors.at(
                attr,
                "a function takes one of `#[kernel]` and `#[fused_grad]`, once",
            );
            continue;
        }
        found = Some((mode, args));
    }
    found.map(|(m, a)| (m, a, rest))
}

/// The function as the CPU sees it: `#[uniform]` (and any other non-lint parameter
/// attribute, already reported) removed, since rustc does not accept them on parameters,
/// and any further kernel attribute (reported as applied twice) removed.
fn clean(f: &ItemFn) -> ItemFn {
    let mut f = f.clone();
    f.attrs.retain(|a| kernel_macro_name(a).is_none());
    for arg in f.sig.inputs.iter_mut() {
        if let FnArg::Typed(pt) = arg {
            pt.attrs.retain(is_lint_attr);
        }
    }
    f
}

/// The function as emitted when it did not compile: its signature, so code calling it
/// type-checks, and a body that does nothing. Its own body would make rustc report again
/// what tang already reported (an unknown method, a wrong argument count): one error per
/// problem, from tang.
fn stub(f: &ItemFn) -> ItemFn {
    let mut f = clean(f);
    f.attrs
        .push(syn::parse_quote!(#[allow(unused_variables, unused_mut, dead_code)]));
    f.block = Box::new(syn::parse_quote!({
        ::core::unreachable!("this kernel did not compile")
    }));
    f
}

/// Crates that a kernel's name would shadow in its module (the generated `mod f` takes
/// the function's name), breaking paths such as `core::f32::consts::PI` there.
const SHADOWED_CRATES: &[&str] = &["core", "std", "alloc", "tang_runtime", "tang_expr"];

struct FnOutput {
    module: TokenStream,
    kernels: Vec<Kernel>,
    nodes: usize,
}

fn describe(e: &ExprError) -> String {
    match e {
        ExprError::BadName(n) => format!(
            "`{n}` cannot name a kernel buffer: names must be unique ASCII identifiers (outputs \
             are named `out` or `out0, out1, ...`, partials `d_<output>_<input>`, upstream \
             gradients `g_<output>`); rename the parameter"
        ),
        ExprError::Invalid(v) => format!("naga rejected the generated shader: {v}"),
        other => format!("the kernel could not be built: {other}"),
    }
}

fn compile_fn(
    f: &ItemFn,
    mode: Mode,
    attr: TokenStream,
    fns: &FnTable,
) -> Result<FnOutput, Errors> {
    let mut errors = Errors::default();
    let fname = f.sig.ident.unraw().to_string();
    if SHADOWED_CRATES.contains(&fname.as_str()) {
        errors.at(
            &f.sig.ident,
            format!(
                "a kernel cannot be named `{fname}`: its generated `mod {fname}` would shadow \
                 the `{fname}` crate in this module; rename the function"
            ),
        );
    }
    let wrt = sig::parse_attr(attr, &mode, &mut errors);
    let sig = sig::check_signature(&f.sig, &mode, &wrt, &mut errors);
    let name = f.sig.ident.unraw().to_string();
    let mut lw = Lowerer::new(&name, fns);
    let lowered = lw.kernel_body(&sig.params, &sig.rejected, sig.ret, &f.block);
    errors.extend(std::mem::take(&mut lw.errors));
    if !errors.is_empty() {
        return Err(errors);
    }
    let nodes = lw.g.len();
    let param_name = |k: ParamKind| -> Vec<String> {
        sig.params
            .iter()
            .filter(|p| p.kind == k)
            .map(|p| p.ident.unraw().to_string())
            .collect()
    };
    let inputs = param_name(ParamKind::Input);
    let uniforms = param_name(ParamKind::Uniform);
    let inout_names = param_name(ParamKind::InOut);
    let outputs: Vec<(String, crate::NodeId)> = sig
        .output_names()
        .into_iter()
        .zip(lowered.outputs.iter().copied())
        .collect();
    // The kernel as lowered, before simplification: where a rejected shader is traced
    // back to the user's code.
    let raw = ElementwiseSpec {
        name: name.clone(),
        graph: &lw.g,
        inputs: inputs.clone(),
        uniforms: uniforms.clone(),
        inouts: inout_names
            .iter()
            .cloned()
            .zip(lowered.inouts.iter().copied())
            .collect(),
        outputs: outputs.clone(),
    };
    let fail = |e: ExprError| {
        let mut errs = Errors::default();
        if let ExprError::Invalid(_) = e
            && let Some((site, message)) = locate::rejected_expression(&raw, &lw.spans)
        {
            errs.range(
                site,
                format!("naga rejected the shader generated for this expression: {message}"),
            );
            return errs;
        }
        // A name clash is the parameter's; anything else is the function's.
        let at = match &e {
            ExprError::BadName(n) => sig.params.iter().find(|p| &p.name == n),
            _ => None,
        }
        .map_or(f.sig.ident.span(), |p| p.ident.span());
        errs.span(at, describe(&e));
        errs
    };
    let (value, fused) = match mode {
        Mode::Kernel => {
            let roots: Vec<crate::NodeId> = lowered
                .inouts
                .iter()
                .chain(&lowered.outputs)
                .copied()
                .collect();
            let (g, r) = simplify(&lw.g, &roots);
            let n_io = lowered.inouts.len();
            let spec = ElementwiseSpec {
                name: name.clone(),
                graph: &g,
                inputs,
                uniforms,
                inouts: inout_names.into_iter().zip(r.iter().copied()).collect(),
                outputs: outputs
                    .iter()
                    .map(|(n, _)| n.clone())
                    .zip(r.iter().skip(n_io).copied())
                    .collect(),
            };
            (emit_elementwise(&spec).map_err(fail)?, None)
        }
        Mode::FusedGrad => {
            let fk = fused_grad_kernels(&FusedSpec {
                name: name.clone(),
                graph: &lw.g,
                inputs,
                uniforms,
                outputs,
                wrt: sig.wrt.clone(),
            })
            .map_err(fail)?;
            (fk.value.clone(), Some(fk))
        }
    };
    let module = emit::module(&f.vis, &sig, &value, fused.as_ref()).map_err(|e| {
        let mut errs = Errors::default();
        errs.span(f.sig.ident.span(), e);
        errs
    })?;
    let mut kernels = vec![value];
    if let Some(fk) = fused {
        kernels.push(fk.grad);
        kernels.push(fk.vjp);
    }
    Ok(FnOutput {
        module,
        kernels,
        nodes,
    })
}

#[cfg(test)]
mod tests;
