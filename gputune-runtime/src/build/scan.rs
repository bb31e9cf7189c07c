//! Finding the `#[tune]` functions of a crate in its sources.

use std::path::{Path, PathBuf};

use gputune_grammar::TuneSpec;
use syn::visit::Visit;

/// A `#[tune]` function found in the sources.
#[derive(Debug, Clone)]
pub struct Found {
    /// Its name.
    pub name: String,
    /// The file it is in, relative to the package root.
    pub file: String,
    /// The attribute's tokens as text.
    pub attribute: String,
    /// The parsed attribute.
    pub spec: TuneSpec,
    /// Names of its generic type parameters.
    pub type_generics: Vec<String>,
    /// Names of its const generic parameters.
    pub const_generics: Vec<String>,
}

/// A problem in one source file that the build helper reports as a warning (the compiler
/// reports it properly when it compiles the file).
#[derive(Debug, Clone)]
pub struct Skipped {
    /// The file, relative to the package root.
    pub file: String,
    /// What is wrong.
    pub message: String,
}

/// Every `.rs` file under `dir`, sorted, so the order of the functions is stable.
pub fn rust_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The `#[tune]` functions of one file's text. `file` names it in the results.
pub fn scan_source(file: &str, text: &str) -> (Vec<Found>, Vec<Skipped>) {
    let mut skipped = Vec::new();
    let parsed = match syn::parse_file(text) {
        Ok(f) => f,
        Err(e) => {
            skipped.push(Skipped {
                file: file.to_string(),
                message: format!("cannot parse: {e}"),
            });
            return (Vec::new(), skipped);
        }
    };
    let mut visitor = Visitor {
        file,
        found: Vec::new(),
        skipped,
    };
    visitor.visit_file(&parsed);
    (visitor.found, visitor.skipped)
}

struct Visitor<'a> {
    file: &'a str,
    found: Vec<Found>,
    skipped: Vec<Skipped>,
}

impl Visitor<'_> {
    fn function(&mut self, attrs: &[syn::Attribute], sig: &syn::Signature) {
        let Some(attr) = attrs.iter().find(|a| is_tune(a.path())) else {
            return;
        };
        let tokens = match &attr.meta {
            syn::Meta::List(list) => list.tokens.clone(),
            _ => proc_macro2::TokenStream::new(),
        };
        let name = sig.ident.to_string();
        match gputune_grammar::parse_tokens(tokens.clone()) {
            Ok(spec) => self.found.push(Found {
                name,
                file: self.file.to_string(),
                attribute: tokens.to_string(),
                spec,
                type_generics: sig
                    .generics
                    .type_params()
                    .map(|t| t.ident.to_string())
                    .collect(),
                const_generics: sig
                    .generics
                    .const_params()
                    .map(|c| c.ident.to_string())
                    .collect(),
            }),
            // The macro reports it with a span when the crate compiles.
            Err(e) => self.skipped.push(Skipped {
                file: self.file.to_string(),
                message: format!("#[tune] on `{name}`: {}", e.message),
            }),
        }
    }
}

/// `tune`, `gputune_macros::tune` or `gputune::tune`.
fn is_tune(path: &syn::Path) -> bool {
    path.segments.last().is_some_and(|s| s.ident == "tune")
        && (path.segments.len() == 1
            || path
                .segments
                .first()
                .is_some_and(|s| s.ident == "gputune_macros" || s.ident == "gputune"))
}

impl<'ast> Visit<'ast> for Visitor<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(&f.attrs, &f.sig);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.function(&f.attrs, &f.sig);
        syn::visit::visit_impl_item_fn(self, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_free_functions_methods_and_nested_ones() {
        let text = r#"
            use gputune_macros::tune;
            #[tune(a = 1..=2, base(a = 1))]
            pub fn first<T: Copy, const N: usize>(x: T) -> T { x }
            struct S;
            impl S {
                #[gputune_macros::tune(b = [x, y], base(b = x))]
                fn second(&self) {}
            }
            mod inner {
                #[tune(c = pow2(1..=3), base(c = 2))]
                fn third() {}
                #[other::tune(d = 1..=2, base(d = 1))]
                fn not_ours() {}
            }
            #[tune(e = 4..=1, base(e = 1))]
            fn broken() {}
        "#;
        let (found, skipped) = scan_source("src/lib.rs", text);
        let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["first", "second", "third"]);
        assert_eq!(found[0].type_generics, ["T"]);
        assert_eq!(found[0].const_generics, ["N"]);
        assert_eq!(found[2].spec.space().len(), 3);
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].message.contains("`broken`: empty range"));
    }

    #[test]
    fn an_unparsable_file_is_skipped_with_a_message() {
        let (found, skipped) = scan_source("src/x.rs", "fn (");
        assert!(found.is_empty());
        assert!(skipped[0].message.starts_with("cannot parse"));
    }
}
