//! The items emitted beside a kernel function: `WGSL`, `KERNEL`, `launch`, and for
//! `#[fused_grad]` also `GRAD`, `VJP`, their launchers and the CPU twins `grad`/`vjp`.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{ToTokens, format_ident, quote};

use super::sig::{Param, ParamKind, Ret, Sig};
use super::twin::twin_body;
use crate::fused::FusedKernels;
use crate::graph::Node;
use crate::kernel::Kernel;

fn strs(names: &[String]) -> TokenStream {
    quote!(&[#(#names),*])
}

/// A `KernelDesc` literal for `k`, whose WGSL is the constant `wgsl`.
fn desc(k: &Kernel, wgsl: &Ident) -> TokenStream {
    let name = &k.name;
    let inputs = strs(&k.inputs);
    let uniforms = strs(&k.uniforms);
    let inouts = strs(&k.inouts);
    let outputs = strs(&k.outputs);
    let id = Literal::u64_suffixed(k.id);
    let f16 = k.wgsl_f16.as_deref().map(|w| {
        let (w, id) = (wgsl_literal(w), Literal::u64_suffixed(k.id_f16));
        quote!(.with_f16(#w, #id))
    });
    // SAFETY (of the generated block): the WGSL (both variants) is the code generator's
    // output for this binding layout, naga-validated during expansion, every access
    // guarded by `params.n`.
    quote! {
        unsafe {
            ::tang_runtime::__private::KernelDesc::new_trusted(
                #name, #wgsl, #inputs, #uniforms, #inouts, #outputs, #id,
            )#f16
        }
    }
}

/// A WGSL source as a raw string literal (one token, no escaping: WGSL has no quotes).
fn wgsl_literal(wgsl: &str) -> TokenStream {
    if !wgsl.contains("\"#")
        && let Ok(ts) = format!("r#\"{wgsl}\"#").parse::<TokenStream>()
    {
        return ts;
    }
    Literal::string(wgsl).into_token_stream()
}

/// Parses generated Rust source; failing is a tang bug, reported as such.
fn parse(code: &str) -> Result<TokenStream, String> {
    code.parse::<TokenStream>()
        .map_err(|e| format!("internal error: generated CPU twin does not tokenize: {e}"))
}

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

/// Code turning the `Vec<Tensor>` in `__tang_outs` into the value `shape` builds from
/// `count` tensors named `__tang_o0, __tang_o1, ...`; `desc` is the descriptor's path.
fn unpack(desc: &TokenStream, count: usize, shape: TokenStream) -> TokenStream {
    let names: Vec<Ident> = (0..count).map(|i| format_ident!("__tang_o{i}")).collect();
    let somes = names
        .iter()
        .map(|n| quote!(::core::option::Option::Some(#n)));
    let nexts = names.iter().map(|_| quote!(__tang_it.next()));
    quote! {
        let __tang_got = __tang_outs.len();
        let mut __tang_it = __tang_outs.into_iter();
        match (#(#nexts,)*) {
            (#(#somes,)*) => ::core::result::Result::Ok(#shape),
            _ => ::core::result::Result::Err(::tang_runtime::__private::Error::Arity {
                op: #desc.name().into(),
                what: "outputs",
                expected: #count,
                got: __tang_got,
            }),
        }
    }
}

/// `(o0, [o1, o2])`-style shapes: values first (a tensor, or a tuple of them), then for
/// each value its partials (an array, or an array of arrays for a tuple).
fn value_shape(ret: Ret, names: &[Ident]) -> TokenStream {
    match ret {
        Ret::Unit => quote!(()),
        Ret::Scalar => names.first().map(|n| quote!(#n)).unwrap_or_default(),
        Ret::Tuple(_) => quote!((#(#names,)*)),
    }
}

fn value_type(ret: Ret, elem: &TokenStream) -> TokenStream {
    match ret {
        Ret::Unit => quote!(()),
        Ret::Scalar => elem.clone(),
        Ret::Tuple(n) => {
            let elems = (0..n).map(|_| elem);
            quote!((#(#elems,)*))
        }
    }
}

fn partials_type(ret: Ret, n: usize, elem: &TokenStream) -> TokenStream {
    match ret {
        Ret::Tuple(m) => quote!([[#elem; #n]; #m]),
        _ => quote!([#elem; #n]),
    }
}

fn partials_shape(ret: Ret, n: usize, names: &[TokenStream]) -> TokenStream {
    match ret {
        Ret::Tuple(_) => {
            let rows = names.chunks(n.max(1)).map(|row| quote!([#(#row),*]));
            quote!([#(#rows),*])
        }
        _ => quote!([#(#names),*]),
    }
}

/// The constants emitted in `mod f`. An identifier pattern that names a constant in scope
/// matches it instead of binding a new name, so a parameter named like one of them must
/// be renamed in the generated functions.
const GENERATED_CONSTS: &[&str] = &[
    "WGSL",
    "KERNEL",
    "GRAD",
    "GRAD_WGSL",
    "VJP",
    "VJP_WGSL",
    "FUSED",
];

/// The name parameter `p` has inside the generated functions: its own, or (for a name of
/// [`GENERATED_CONSTS`]) that name with `_` appended until it is free.
fn local_ident(sig: &Sig, p: &Param) -> Ident {
    if !GENERATED_CONSTS.contains(&p.name.as_str()) {
        return p.ident.clone();
    }
    let mut name = format!("{}_", p.name);
    while GENERATED_CONSTS.contains(&name.as_str()) || sig.params.iter().any(|q| q.name == name) {
        name.push('_');
    }
    Ident::new(&name, p.ident.span())
}

/// What the generated items name: the signature, the tensor type, the launchers' device
/// parameter and the parameters under their local names.
struct Names<'a> {
    sig: &'a Sig,
    fname: String,
    tensor: TokenStream,
    dev: Ident,
    inputs: Vec<Ident>,
    uniforms: Vec<Ident>,
    inouts: Vec<Ident>,
}

impl<'a> Names<'a> {
    fn new(sig: &'a Sig) -> Self {
        // The launchers' device parameter: `dev`, or `dev_`, `dev__`, ... if a kernel
        // parameter has that name. Generated items are named by path (`self::KERNEL`), so a
        // parameter named `KERNEL` or `WGSL` shadows nothing they use.
        let mut dev_name = String::from("dev");
        while sig.params.iter().any(|p| p.name == dev_name) {
            dev_name.push('_');
        }
        Names {
            sig,
            fname: sig.ident.to_string(),
            tensor: quote!(::tang_runtime::__private::Tensor),
            dev: ident(&dev_name),
            inputs: sig.inputs().map(|p| local_ident(sig, p)).collect(),
            uniforms: sig.uniforms().map(|p| local_ident(sig, p)).collect(),
            inouts: sig.inouts().map(|p| local_ident(sig, p)).collect(),
        }
    }

    /// `name: type` for each parameter (in-outs too where `with_inouts`), typed by `ty`.
    fn params(&self, with_inouts: bool, ty: impl Fn(ParamKind) -> TokenStream) -> Vec<TokenStream> {
        let sig = self.sig;
        let params = sig
            .params
            .iter()
            .filter(|p| with_inouts || p.kind != ParamKind::InOut);
        params
            .map(|p| {
                let (id, ty) = (local_ident(sig, p), ty(p.kind));
                quote!(#id: #ty)
            })
            .collect()
    }

    /// A launcher's parameter type: `f32` for a uniform, a tensor reference otherwise.
    fn gpu_type(&self, kind: ParamKind) -> TokenStream {
        let tensor = &self.tensor;
        match kind {
            ParamKind::Uniform => quote!(f32),
            ParamKind::Input | ParamKind::InOut => quote!(&#tensor),
        }
    }

    /// The differentiated inputs as a list for docs: "`x`, `y`".
    fn wrt_list(&self) -> String {
        let sig = self.sig;
        let names = sig.wrt.iter().filter_map(|&i| sig.inputs().nth(i as usize));
        names
            .map(|p| format!("`{}`", p.name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The doc of `mod f`, naming the attribute that generated it.
    fn module_doc(&self, attr: &str) -> String {
        let fname = &self.fname;
        format!(
            "GPU kernel of [`{fname}`](fn@super::{fname}), generated at compile time by `{attr}`."
        )
    }
}

/// Everything `#[kernel]` / `#[fused_grad]` emits for `sig`, as the body of `mod f`.
pub(crate) fn module(
    vis: &syn::Visibility,
    sig: &Sig,
    value: &Kernel,
    fused: Option<&FusedKernels>,
) -> Result<TokenStream, String> {
    let names = Names::new(sig);
    let mut items = value_items(&names, value);
    let Some(fk) = fused else {
        return Ok(wrap(vis, sig, names.module_doc("#[kernel]"), items));
    };
    // The upstream gradients of the backward pass, one per output.
    let g_names: Vec<Ident> = value
        .outputs
        .iter()
        .map(|o| format_ident!("g_{}", o))
        .collect();
    items.extend(gradient_launchers(&names, value, fk, &g_names));
    items.extend(cpu_twins(&names, value, fk, &g_names)?);
    items.extend(fused_op(sig, fk));
    Ok(wrap(vis, sig, names.module_doc("#[fused_grad]"), items))
}

/// `WGSL`, `KERNEL` and `launch`: what every kernel emits.
fn value_items(names: &Names<'_>, value: &Kernel) -> TokenStream {
    let Names {
        sig,
        tensor,
        dev,
        inputs,
        uniforms,
        inouts,
        ..
    } = names;
    let launch_params = names.params(true, |k| names.gpu_type(k));
    let n_out = value.outputs.len();
    let out_names: Vec<Ident> = (0..n_out).map(|i| format_ident!("__tang_o{i}")).collect();
    let kernel_desc = desc(value, &ident("WGSL"));
    let wgsl = wgsl_literal(&value.wgsl);
    let ret_ty = value_type(sig.ret, tensor);
    let unpack_value = unpack(
        &quote!(self::KERNEL),
        n_out,
        value_shape(sig.ret, &out_names),
    );
    let launch_doc = format!(
        "Runs [`KERNEL`] on `{dev}`: one element per position of the broadcast of the \
         tensors' shapes (NumPy/PyTorch rules); `&mut f32` parameters are updated in place \
         and must have that shape. Recorded now, run at the next sync point.\n\n\
         # Errors\nShape, arity or device errors from `Device::launch`."
    );
    quote! {
        /// The kernel's WGSL source, validated by naga when it was generated.
        pub const WGSL: &str = #wgsl;
        /// The kernel's descriptor: what `Device::launch` runs.
        #[allow(unsafe_code)]
        pub const KERNEL: ::tang_runtime::__private::KernelDesc = #kernel_desc;
        #[doc = #launch_doc]
        pub fn launch(#dev: &::tang_runtime::__private::Device, #(#launch_params),*)
            -> ::core::result::Result<#ret_ty, ::tang_runtime::__private::Error>
        {
            let __tang_outs = #dev.launch(&self::KERNEL, &[#(#inputs),*], &[#(#inouts),*], &[#(#uniforms),*])?;
            #unpack_value
        }
    }
}

/// For `#[fused_grad]`: `GRAD`, `VJP`, their WGSL and their launchers.
fn gradient_launchers(
    names: &Names<'_>,
    value: &Kernel,
    fk: &FusedKernels,
    g_names: &[Ident],
) -> TokenStream {
    let Names {
        sig,
        tensor,
        dev,
        inputs,
        uniforms,
        ..
    } = names;
    let n_wrt = sig.wrt.len();
    let n_out = value.outputs.len();
    let value_params = names.params(false, |k| names.gpu_type(k));
    let grad_desc = desc(&fk.grad, &ident("GRAD_WGSL"));
    let vjp_desc = desc(&fk.vjp, &ident("VJP_WGSL"));
    let (grad_wgsl, vjp_wgsl) = (wgsl_literal(&fk.grad.wgsl), wgsl_literal(&fk.vjp.wgsl));
    let n_grad = fk.grad.outputs.len();
    let grad_out: Vec<Ident> = (0..n_grad).map(|i| format_ident!("__tang_o{i}")).collect();
    let grad_part: Vec<TokenStream> = grad_out.iter().skip(n_out).map(|n| quote!(#n)).collect();
    let grad_shape_v = value_shape(sig.ret, grad_out.get(..n_out).unwrap_or(&[]));
    let grad_shape_p = partials_shape(sig.ret, n_wrt, &grad_part);
    let unpack_grad = unpack(
        &quote!(self::GRAD),
        n_grad,
        quote!((#grad_shape_v, #grad_shape_p)),
    );
    let grad_ty_t = {
        let v = value_type(sig.ret, tensor);
        let p = partials_type(sig.ret, n_wrt, tensor);
        quote!((#v, #p))
    };
    let vjp_out = (0..n_wrt)
        .map(|i| format_ident!("__tang_o{i}"))
        .map(|n| quote!(#n));
    let unpack_vjp = unpack(&quote!(self::VJP), n_wrt, quote!([#(#vjp_out),*]));
    let wrt_list = names.wrt_list();
    let launch_grad_doc = format!(
        "Runs [`GRAD`]: the values and, per output, the partials with respect to {wrt_list}, \
         in one dispatch (same shapes as [`grad`]).\n\n# Errors\nAs [`launch`]."
    );
    let launch_vjp_doc = format!(
        "Runs [`VJP`]: input gradients for {wrt_list} from the inputs and the upstream \
         gradients (the backward pass), in one dispatch.\n\n# Errors\nAs [`launch`]."
    );
    quote! {
        /// WGSL of [`GRAD`] (values and partials in one dispatch), validated by naga.
        pub const GRAD_WGSL: &str = #grad_wgsl;
        /// Values and every partial derivative, in one dispatch: outputs are the values,
        /// then `d_<output>_<input>` for each output and each differentiated input.
        #[allow(unsafe_code)]
        pub const GRAD: ::tang_runtime::__private::KernelDesc = #grad_desc;
        /// WGSL of [`VJP`] (the backward pass), validated by naga.
        pub const VJP_WGSL: &str = #vjp_wgsl;
        /// The backward pass in one dispatch: inputs are the function's inputs then
        /// `g_<output>` per output; outputs are `grad_<input>` per differentiated input.
        #[allow(unsafe_code)]
        pub const VJP: ::tang_runtime::__private::KernelDesc = #vjp_desc;
        #[doc = #launch_grad_doc]
        pub fn launch_grad(#dev: &::tang_runtime::__private::Device, #(#value_params),*)
            -> ::core::result::Result<#grad_ty_t, ::tang_runtime::__private::Error>
        {
            let __tang_outs = #dev.launch(&self::GRAD, &[#(#inputs),*], &[], &[#(#uniforms),*])?;
            #unpack_grad
        }
        #[doc = #launch_vjp_doc]
        pub fn launch_vjp(#dev: &::tang_runtime::__private::Device, #(#value_params,)* #(#g_names: &#tensor),*)
            -> ::core::result::Result<[#tensor; #n_wrt], ::tang_runtime::__private::Error>
        {
            let __tang_outs = #dev.launch(&self::VJP, &[#(#inputs,)* #(#g_names),*], &[], &[#(#uniforms),*])?;
            #unpack_vjp
        }
    }
}

/// For `#[fused_grad]`: the CPU twins `grad`, `value_f64` and `vjp`, printed from the
/// simplified graph whose leaves are the parameters.
fn cpu_twins(
    names: &Names<'_>,
    value: &Kernel,
    fk: &FusedKernels,
    g_names: &[Ident],
) -> Result<TokenStream, String> {
    let Names {
        sig,
        fname,
        inputs,
        uniforms,
        ..
    } = names;
    let n_wrt = sig.wrt.len();
    let n_out = value.outputs.len();
    let n_in = inputs.len();
    let leaf = |node: Node| -> Option<String> {
        let id = match node {
            Node::Input(i) if (i as usize) < n_in => inputs.get(i as usize)?,
            Node::Input(i) => g_names.get(i as usize - n_in)?,
            Node::Uniform(j) => uniforms.get(j as usize)?,
            _ => return None,
        };
        Some(id.to_string())
    };
    let twin =
        |roots: &[crate::NodeId], f64: bool| -> Result<(TokenStream, Vec<TokenStream>), String> {
            let (body, roots) = twin_body(&fk.graph, roots, &leaf, f64)
                .ok_or("internal error: a CPU twin reads a value that is not a parameter")?;
            let roots = roots
                .iter()
                .map(|r| parse(r))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((parse(&body)?, roots))
        };
    let (grad_body, grad_roots) = twin(&fk.grad_roots, false)?;
    let (vjp_body, vjp_roots) = twin(&fk.vjp_roots, false)?;
    let (f64_body, f64_roots) = twin(&fk.value_roots, true)?;
    let f64_ty = value_type(sig.ret, &quote!(f64));
    let f64_v = value_shape_tokens(sig.ret, &f64_roots);
    let f64_params = names.params(false, |_| quote!(f64));
    let cpu_v = value_shape_tokens(sig.ret, grad_roots.get(..n_out).unwrap_or(&[]));
    let cpu_p = partials_shape(sig.ret, n_wrt, grad_roots.get(n_out..).unwrap_or(&[]));
    let f32_t = quote!(f32);
    let cpu_grad_ty = {
        let v = value_type(sig.ret, &f32_t);
        let p = partials_type(sig.ret, n_wrt, &f32_t);
        quote!((#v, #p))
    };
    let cpu_params = names.params(false, |_| quote!(f32));
    let wrt_list = names.wrt_list();
    let grad_doc = format!(
        "CPU twin of [`GRAD`]: the value of [`{fname}`](fn@super::{fname}) and its partial \
         derivatives with respect to {wrt_list}, in that order. For a function returning a \
         tuple, the values come as that tuple and the partials as one row per output \
         (`[[f32; N]; M]`, row `k` holds the partials of output `k`). Emitted from the same \
         simplified graph as the GPU kernel."
    );
    let vjp_doc = format!(
        "CPU twin of [`VJP`]: given the inputs and one upstream gradient per output (`g_out` \
         for a single output, `g_out0, g_out1, ...` for a tuple), the gradient with respect \
         to {wrt_list}: `sum over outputs of g * d(output)/d(input)`."
    );
    Ok(quote! {
        #[doc = #grad_doc]
        #[inline]
        pub fn grad(#(#cpu_params),*) -> #cpu_grad_ty {
            #grad_body
            (#cpu_v, #cpu_p)
        }
        /// The function's value computed in f64 from the same simplified graph (each op
        /// as the IR evaluates it in f64): a reference for finite-difference checks of
        /// [`grad`] and [`vjp`].
        pub fn value_f64(#(#f64_params),*) -> #f64_ty {
            #f64_body
            #f64_v
        }
        #[doc = #vjp_doc]
        #[inline]
        pub fn vjp(#(#cpu_params,)* #(#g_names: f32),*) -> [f32; #n_wrt] {
            #vjp_body
            [#(#vjp_roots),*]
        }
    })
}

/// For `#[fused_grad]` of one output and no in-outs, `FUSED`: the function as a tensor op
/// (the runtime's `FusedFn`), forward and backward with broadcasting, which tang-nn records
/// as an autograd op. `None` for other functions.
fn fused_op(sig: &Sig, fk: &FusedKernels) -> Option<TokenStream> {
    if !matches!(sig.ret, Ret::Scalar) || sig.inouts().next().is_some() {
        return None;
    }
    let wrt = sig
        .wrt
        .iter()
        .map(|&i| Literal::usize_unsuffixed(i as usize));
    let passthrough = fk.vjp_passthrough();
    Some(quote! {
        /// The function as a differentiable tensor op: `FUSED.forward(&[..], &[..])`
        /// over broadcast inputs, `FUSED.backward(grad_out, ..)` through [`VJP`]; in
        /// tang-nn, `tang_nn::autograd::apply(&FUSED, ..)` records it for autograd.
        pub const FUSED: ::tang_runtime::__private::FusedFn =
            ::tang_runtime::__private::FusedFn::new(self::KERNEL, self::VJP, &[#(#wrt),*], &[#(#passthrough),*]);
    })
}

fn value_shape_tokens(ret: Ret, exprs: &[TokenStream]) -> TokenStream {
    match ret {
        Ret::Unit => quote!(()),
        Ret::Scalar => exprs.first().cloned().unwrap_or_default(),
        Ret::Tuple(_) => quote!((#(#exprs,)*)),
    }
}

/// `mod f { ... }` beside `fn f`, with the function's visibility. Lints that generated
/// code cannot act on are allowed (a CPU twin may not use every parameter).
fn wrap(vis: &syn::Visibility, sig: &Sig, doc: String, items: TokenStream) -> TokenStream {
    let name = &sig.ident;
    quote! {
        #[doc = #doc]
        #[allow(unused_variables, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
        #vis mod #name {
            #items
        }
    }
}
