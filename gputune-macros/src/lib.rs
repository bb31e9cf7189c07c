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
//! tokens.
//!
//! # Variants
//!
//! With the build helper (`gputune_runtime::build::main()` in the crate's `build.rs`,
//! feature `build` of `gputune-runtime`), the body becomes a local macro over the constants
//! and the function's body is the dispatch the helper wrote to `OUT_DIR/gputune/NAME.rs`:
//! base, the entries applied in `gputune.toml` for the running device, and whatever
//! `GPUTUNE_VARIANTS` selected for this build. Without the helper (no build script, or one
//! that does not call it), the constants are the base values. Because the body is a `macro_rules!` transcriber, a `$`
//! in it (a nested `macro_rules!`) is escaped for you; the function must be reachable as
//! `::gputune_runtime` (do not rename the dependency).
//!
//! # Per-size winners
//!
//! `size(Elements = n)` declares which value of the bench's runtime axis `Elements` a call
//! handles, as an expression of the arguments (`n`, `x.len()`; any integer type). It adds no
//! parameter. With per-size entries in `gputune.toml` (`cargo gputune apply --per-size`), a
//! production build evaluates it on every call, before the body, and runs the winner of the
//! size range the value falls in (see docs/gputune-toml.md):
//!
//! ```ignore
//! #[tune(ipt = [1, 2, 4, 8], tpb = pow2(6..=10), base(ipt = 4, tpb = 256),
//!        size(Elements = x.len()))]
//! pub fn scale(x: &CudaSlice<f32>, y: &mut CudaSlice<f32>) -> Result<(), BoxError> { /* … */ }
//! ```
//!
//! # Parameters as data
//!
//! Next to a free function `name`, `#[tune]` declares `NAME_PARAMS: &[(&str, &str)]` with the
//! function's visibility: each parameter's name and base value, in declaration order, as
//! labels write them. With `gputune_runtime::tuned::Variant::parse(label, NAME_PARAMS)` a
//! bench turns the labels it will run (`gputune_runtime::tuned::planned`) into parameter
//! values, to prepare every variant up front (compile its kernels, say):
//!
//! ```
//! use gputune_macros::tune;
//!
//! #[tune(ipt = [1, 2, 4, 8], wide_load = [true, false], base(ipt = 4, wide_load = false))]
//! pub fn copy() {}
//!
//! assert_eq!(COPY_PARAMS, [("ipt", "4"), ("wide_load", "false")]);
//! ```

mod embed;

use gputune_grammar::{ConstType, TuneSpec, Value};
use proc_macro::TokenStream;
use quote::{format_ident, quote};

/// A kernel kept in a `.cu` file of the crate: `kernel!("src/sum.cu", "sum")` is a
/// `gputune_runtime::kernel::Kernel` (usable in a `static`) of the file's source, with every
/// file it includes with `#include "…"` (found next to the file that includes it,
/// transitively) embedded as a header under the name it is included by. The binary needs no
/// source tree at run time, and editing any of the files rebuilds the crate. The path is
/// relative to the crate's root (where its `Cargo.toml` is); the second argument is the
/// kernel's name expression. Further settings chain as on `Kernel::new`:
///
/// ```ignore
/// static SUM: Kernel = gputune_macros::kernel!("src/sum.cu", "sum").options(&["-lineinfo"]);
/// ```
///
/// Headers that are not next to their includer (CUB's, a library's) are found at run time in
/// CUDA's include directories and those given with `Kernel::include_dirs`.
#[proc_macro]
pub fn kernel(input: TokenStream) -> TokenStream {
    match kernel_tokens(input.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// A kernel of a CUDA file that nvcc compiles at build time, once per variant, for
/// kernels NVRTC cannot compile or projects that build with nvcc: the `Kernel` over the
/// table of images that `gputune_runtime::build::Builder::kernels` wrote for the file.
///
/// ```ignore
/// // build.rs: Builder::new().kernels(CudaFile::new("src/scale.cu").functions(&["scale"])).main();
/// static SCALE: Kernel = gputune_macros::nvcc_kernel!("src/scale.cu", "scale");
/// ```
#[proc_macro]
pub fn nvcc_kernel(input: TokenStream) -> TokenStream {
    match table_tokens(input.into(), "nvcc") {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The C++ launchers of a CUDA file that nvcc compiles at build time, once per variant, into
/// one static library: the `Launchers` over the table that
/// `gputune_runtime::build::Builder::launchers` wrote for the file.
///
/// ```ignore
/// static LAUNCH: Launchers = gputune_macros::launchers!("src/launch.cu");
/// ```
#[proc_macro]
pub fn launchers(input: TokenStream) -> TokenStream {
    match table_tokens(input.into(), "launchers") {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn table_tokens(
    input: proc_macro2::TokenStream,
    kind: &str,
) -> syn::Result<proc_macro2::TokenStream> {
    use syn::parse::Parser;
    let args = syn::punctuated::Punctuated::<syn::LitStr, syn::Token![,]>::parse_terminated
        .parse2(input.clone())?;
    let (usage, arity) = match kind {
        "nvcc" => ("nvcc_kernel!(\"src/scale.cu\", \"scale\")", 2),
        _ => ("launchers!(\"src/launch.cu\")", 1),
    };
    let Some(file) = args.first().filter(|_| args.len() == arity) else {
        return Err(syn::Error::new_spanned(
            input,
            format!(
                "expected the .cu file (relative to the crate's root){}: {usage}",
                if arity == 2 {
                    " and the kernel's name"
                } else {
                    ""
                }
            ),
        ));
    };
    let rel = gputune_grammar::cuda_table_file(kind, &file.value());
    // Where the build script ran, say early what is missing, not in include!'s words.
    if let Some(out) = std::env::var_os("OUT_DIR") {
        if !std::path::Path::new(&out).join(&rel).is_file() {
            let builder = if kind == "nvcc" {
                "kernels"
            } else {
                "launchers"
            };
            return Err(syn::Error::new(
                file.span(),
                format!(
                    "the build script compiled no {} with nvcc: add \
                     `gputune_runtime::build::Builder::new().{builder}(CudaFile::new({:?})…)` \
                     to build.rs",
                    file.value(),
                    file.value()
                ),
            ));
        }
    }
    let rel = format!("/{rel}");
    let table = quote! {
        ::core::include!(::core::concat!(::core::env!("OUT_DIR"), #rel))
    };
    Ok(if kind == "nvcc" {
        let name = &args[1];
        quote! { ::gputune_runtime::kernel::Kernel::nvcc(#table, #name) }
    } else {
        quote! { ::gputune_runtime::kernel::Launchers::new(#file, #table) }
    })
}

fn kernel_tokens(input: proc_macro2::TokenStream) -> syn::Result<proc_macro2::TokenStream> {
    use syn::parse::Parser;
    let args = syn::punctuated::Punctuated::<syn::LitStr, syn::Token![,]>::parse_terminated
        .parse2(input.clone())?;
    let [file, name] = [args.first(), args.iter().nth(1)];
    let (Some(file), Some(name), 2) = (file, name, args.len()) else {
        return Err(syn::Error::new_spanned(
            input,
            "kernel! takes the .cu file (relative to the crate's root) and the kernel's name:              kernel!(\"src/sum.cu\", \"sum\")",
        ));
    };
    let root = std::env::var_os("CARGO_MANIFEST_DIR").ok_or_else(|| {
        syn::Error::new(
            file.span(),
            "CARGO_MANIFEST_DIR is not set: is cargo building this?",
        )
    })?;
    let path = std::path::Path::new(&root).join(file.value());
    if !path.is_file() {
        return Err(syn::Error::new(
            file.span(),
            format!(
                "no file {} (paths are relative to the crate's root)",
                path.display()
            ),
        ));
    }
    let headers = embed::headers_of(&path).map_err(|e| syn::Error::new(file.span(), e))?;
    let absolute = |p: &std::path::Path| {
        let p = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        syn::LitStr::new(&p.to_string_lossy(), file.span())
    };
    let source = absolute(&path);
    let file_name = path
        .file_name()
        .map_or_else(|| file.value(), |n| n.to_string_lossy().into_owned());
    let header_names = headers.iter().map(|h| &h.name);
    let header_paths = headers.iter().map(|h| absolute(&h.path));
    Ok(quote! {
        ::gputune_runtime::kernel::Kernel::new(::core::include_str!(#source), #name)
            .file_name(#file_name)
            .headers(&[#((#header_names, ::core::include_str!(#header_paths))),*])
    })
}

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
    let name = function.sig.ident.to_string();
    let params = params_const(&function, &spec);
    let capture = capture_call(&function, &spec);
    let body = &function.block;
    // The helper writes its dispatches to `OUT_DIR/gputune/`; a crate whose build script does
    // not call it (or a crate built without one) gets the base values. gputune-runtime's own
    // build script, say, sets `OUT_DIR` for its documentation examples, and runs no helper.
    let generated = std::env::var_os("OUT_DIR")
        .filter(|dir| std::path::Path::new(dir).join("gputune").is_dir());
    function.block = match generated {
        None => {
            let mut consts = constants(&spec);
            let base: Vec<&Value> = spec.base.iter().collect();
            match spec
                .tuned_item(name.trim_start_matches("r#"), &base)
                .parse()
            {
                Ok(item) => consts.push(item),
                Err(e) => {
                    return syn::Error::new(function.sig.ident.span(), e.to_string())
                        .to_compile_error()
                        .into()
                }
            }
            syn::parse_quote!({
                #(#consts)*
                #body
            })
        }
        Some(out_dir) => {
            let file = std::path::Path::new(&out_dir)
                .join("gputune")
                .join(format!("{name}.rs"));
            if !file.is_file() {
                let message = format!(
                    "no variants were generated for `{name}`: call \
                     `gputune_runtime::build::main()` from this crate's build.rs (feature \
                     `build` of gputune-runtime as a build-dependency)"
                );
                return syn::Error::new(function.sig.ident.span(), message)
                    .to_compile_error()
                    .into();
            }
            let body = escape_dollars(quote!(#body));
            let path = format!("/gputune/{name}.rs");
            let count = spec.sizes.len();
            // The size is read before the body runs (which may move the arguments); the
            // dispatch the helper wrote picks the winner of its range. Evaluated even where
            // no per-size entry is applied, so a wrong expression fails every build alike.
            let size = (!spec.sizes.is_empty()).then(|| {
                let tokens = spec.sizes.iter().map(|s| &s.tokens);
                quote! {
                    #[allow(unused_variables)]
                    let __gputune_sizes: [u64; #count] =
                        [#(::gputune_runtime::tuned::size_value(&(#tokens))),*];
                }
            });
            syn::parse_quote!({
                macro_rules! __gputune_body {
                    ($__gputune_d:tt; $($__gputune_c:item)*) => {{ $($__gputune_c)* #body }};
                }
                #size
                #capture
                include!(concat!(env!("OUT_DIR"), #path))
            })
        }
    };
    quote!(#function #params).into()
}

/// With `GPUTUNE_CAPTURE` set, the call's workload noted: each generic type parameter's type
/// and each `size(…)` axis's value (read into `__gputune_sizes` just before).
fn capture_call(function: &syn::ItemFn, spec: &TuneSpec) -> proc_macro2::TokenStream {
    let name = function.sig.ident.to_string();
    let name = name.trim_start_matches("r#");
    let idents: Vec<&syn::Ident> = function
        .sig
        .generics
        .type_params()
        .map(|t| &t.ident)
        .collect();
    let names = idents.iter().map(|i| i.to_string());
    let sizes = spec.sizes.iter().enumerate().map(|(i, s)| {
        let axis = &s.axis;
        quote!((#axis, __gputune_sizes[#i]))
    });
    quote! {
        if ::gputune_runtime::capture::enabled() {
            ::gputune_runtime::capture::note(
                ::core::env!("CARGO_PKG_NAME"),
                #name,
                &[#((#names, ::core::any::type_name::<#idents>())),*],
                &[#(#sizes),*],
            );
        }
    }
}

/// `NAME_PARAMS`: the parameters' names and base values as data, next to the function.
///
/// Methods get none: inside a trait's impl an extra item would not compile.
fn params_const(function: &syn::ItemFn, spec: &TuneSpec) -> proc_macro2::TokenStream {
    if function.sig.receiver().is_some() {
        return quote!();
    }
    let name = function.sig.ident.to_string();
    let ident = format_ident!(
        "{}_PARAMS",
        name.trim_start_matches("r#").to_uppercase(),
        span = function.sig.ident.span()
    );
    let vis = &function.vis;
    let pairs = spec.params.iter().zip(&spec.base).map(|(p, base)| {
        let (n, v) = (&p.name, base.to_string());
        quote!((#n, #v))
    });
    let doc = format!(
        "Names and base values of the tuning parameters of [`{name}`], in declaration order \
         (declared by `#[tune]`; see `gputune_runtime::tuned::Variant`)."
    );
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis const #ident: &[(&str, &str)] = &[#(#pairs),*];
    }
}

/// Replaces each `$` of the body with `$__gputune_d`, the transcriber's escaped `$`, so a
/// nested `macro_rules!` in the body survives being inside one.
fn escape_dollars(tokens: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    use proc_macro2::{Group, Ident, Punct, Spacing, TokenTree};
    tokens
        .into_iter()
        .flat_map(|t| -> Vec<TokenTree> {
            match t {
                TokenTree::Punct(p) if p.as_char() == '$' => vec![
                    TokenTree::Punct(Punct::new('$', Spacing::Alone)),
                    TokenTree::Ident(Ident::new("__gputune_d", p.span())),
                ],
                TokenTree::Group(g) => {
                    let mut inner = Group::new(g.delimiter(), escape_dollars(g.stream()));
                    inner.set_span(g.span());
                    vec![TokenTree::Group(inner)]
                }
                other => vec![other],
            }
        })
        .collect()
}

/// One `const` per parameter with its base value (the build helper writes the same items
/// per variant, typed by the same [`TuneSpec::const_type`]).
fn constants(spec: &TuneSpec) -> Vec<proc_macro2::TokenStream> {
    spec.params
        .iter()
        .zip(&spec.base)
        .enumerate()
        .map(|(i, (p, base))| {
            let name = format_ident!("{}", p.const_name());
            let ty = match spec.const_type(i) {
                ConstType::Usize => quote!(usize),
                ConstType::Isize => quote!(isize),
                ConstType::Bool => quote!(bool),
                ConstType::Str => quote!(&str),
            };
            let value = match base {
                Value::Int(i) => {
                    let lit = proc_macro2::Literal::i64_unsuffixed(*i);
                    quote!(#lit)
                }
                Value::Bool(b) => quote!(#b),
                Value::Ident(s) | Value::Str(s) => quote!(#s),
            };
            quote! {
                #[allow(dead_code)]
                const #name: #ty = #value;
            }
        })
        .collect()
}
