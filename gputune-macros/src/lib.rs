//! The `#[tune]` attribute of gputune.
//!
//! ```
//! use gputune_macros::tune;
//!
//! #[tune(ipt = 1..=16, tpb = (64..=1024).step_by(32), require(ipt * tpb <= 8192), base(ipt = 4, tpb = 256))]
//! fn tile() -> usize {
//!     IPT * TPB
//! }
//!
//! assert_eq!(tile(), 1024);
//! ```
//!
//! Each parameter is a `const` in the body, named in upper case (`ipt` → `IPT`). Its type is
//! `usize` for integers (`isize` if any value is negative), `bool` for booleans and
//! `&'static str` for identifiers and strings. Where another type is needed, convert once in
//! the body: `const TPB32: u32 = TPB as u32;` is evaluated at compile time.
//!
//! The grammar is in the `gputune-grammar` crate, shared with the build helper and
//! `cargo gputune`. A malformed attribute is a compile error pointing at the offending
//! tokens. The constants are the `base` values here; selecting a variant point at build
//! time is the build helper's part (issue #3, not yet written).

use gputune_grammar::{TuneSpec, Value};
use proc_macro::TokenStream;
use quote::{format_ident, quote};

/// Declares a function's tuning parameters; see the crate documentation.
#[proc_macro_attribute]
pub fn tune(attr: TokenStream, item: TokenStream) -> TokenStream {
    let spec = match gputune_grammar::parse_tokens(attr.into()) {
        Ok(spec) => spec,
        Err(e) => return e.to_syn().to_compile_error().into(),
    };
    let mut function: syn::ItemFn = match syn::parse(item) {
        Ok(f) => f,
        Err(e) => {
            return syn::Error::new(e.span(), "#[tune] applies to a function")
                .to_compile_error()
                .into()
        }
    };
    let consts = constants(&spec);
    let body = &function.block;
    function.block = syn::parse_quote!({
        #(#consts)*
        #body
    });
    quote!(#function).into()
}

/// One `const` per parameter with its base value.
fn constants(spec: &TuneSpec) -> Vec<proc_macro2::TokenStream> {
    spec.params
        .iter()
        .zip(&spec.base)
        .map(|(p, base)| {
            let name = format_ident!("{}", p.const_name());
            let negative = p
                .values
                .iter()
                .chain([base])
                .any(|v| v.as_int().is_some_and(|i| i < 0));
            let (ty, value) = match base {
                Value::Int(i) => {
                    let lit = proc_macro2::Literal::i64_unsuffixed(*i);
                    let ty = if negative {
                        quote!(isize)
                    } else {
                        quote!(usize)
                    };
                    (ty, quote!(#lit))
                }
                Value::Bool(b) => (quote!(bool), quote!(#b)),
                Value::Ident(s) | Value::Str(s) => (quote!(&'static str), quote!(#s)),
            };
            quote! {
                #[allow(dead_code)]
                const #name: #ty = #value;
            }
        })
        .collect()
}
