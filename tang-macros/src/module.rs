//! `#[derive(Module)]`: parses a struct with named fields and emits an `impl Module` whose
//! methods hand each field to `::tang_nn::__private` (the naming and the recursion live in
//! the library, not in generated code). Anything it does not accept is a spanned compile
//! error, every one of an item at once; it never panics.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Data, DeriveInput, Fields, LitStr};

/// One field that is a child module: how to reach it and its name in the state dict.
struct Child {
    ident: syn::Ident,
    name: String,
}

/// The expansion of `#[derive(Module)]` on `input`: the impl, or the compile errors.
pub fn expand_derive_module(input: TokenStream) -> TokenStream {
    match derive(input) {
        Ok(tokens) => tokens,
        Err(e) => e.to_compile_error(),
    }
}

fn derive(input: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(input)?;
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => &named.named,
            Fields::Unnamed(_) => {
                return Err(syn::Error::new_spanned(
                    &input.ident,
                    "#[derive(Module)] needs a struct with named fields: each field's name is its \
                     name in the state dict (as a PyTorch attribute); give the fields names",
                ));
            }
            Fields::Unit => &syn::punctuated::Punctuated::new(),
        },
        Data::Enum(_) | Data::Union(_) => {
            return Err(syn::Error::new_spanned(
                &input.ident,
                "#[derive(Module)] only works on a struct with named fields (an enum or union has \
                 no fixed set of parameters); implement `Module` by hand for it",
            ));
        }
    };

    let mut errors: Option<syn::Error> = None;
    let mut children = Vec::new();
    for field in fields {
        match child(field) {
            Ok(Some(c)) => children.push(c),
            Ok(None) => {}
            Err(e) => match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            },
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }

    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let visits = children.iter().map(|c| {
        let (field, name) = (&c.ident, LitStr::new(&c.name, Span::call_site()));
        quote! { ::tang_nn::__private::visit_child(&self.#field, prefix, #name, f); }
    });
    let trainings = children.iter().map(|c| {
        let field = &c.ident;
        quote! { ::tang_nn::__private::set_training(&self.#field, training); }
    });
    Ok(quote! {
        impl #impl_generics ::tang_nn::Module for #ident #ty_generics #where_clause {
            #[allow(unused_variables)]
            fn visit_parameters(
                &self,
                prefix: &str,
                f: &mut dyn ::core::ops::FnMut(&str, &::tang_nn::autograd::Tensor),
            ) {
                #(#visits)*
            }
            #[allow(unused_variables)]
            fn set_training(&self, training: bool) {
                #(#trainings)*
            }
        }
    })
}

/// The field as a child module, `None` when `#[module(skip)]`.
fn child(field: &syn::Field) -> syn::Result<Option<Child>> {
    let Some(ident) = field.ident.clone() else {
        return Err(syn::Error::new_spanned(field, "expected a named field"));
    };
    // A raw identifier (`r#type`) is named without its `r#`, as PyTorch would name it.
    let mut name = ident.to_string().trim_start_matches("r#").to_string();
    let mut skip = false;
    let mut errors: Option<syn::Error> = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("module")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip") {
                skip = true;
                Ok(())
            } else if meta.path.is_ident("name") {
                let lit: LitStr = meta.value()?.parse()?;
                let value = lit.value();
                if value.is_empty() || value.contains('.') {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "a module name must be non-empty and contain no '.' (the dot joins \
                         the names of nested modules)",
                    ));
                }
                name = value;
                Ok(())
            } else {
                Err(meta.error(
                    "unknown #[module] attribute: expected `skip` (a field that is not a \
                     module) or `name = \"...\"` (its name in the state dict)",
                ))
            }
        });
        if let Err(e) = parsed {
            match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            }
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }
    Ok((!skip).then_some(Child { ident, name }))
}
