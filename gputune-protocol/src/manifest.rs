//! The manifest the build helper writes to `OUT_DIR/gputune/manifest.json` and
//! `cargo gputune` reads: the crate's tuned functions, their spaces and what this build
//! compiled in. Plain data; the format is versioned by [`MANIFEST_VERSION`].

use serde::{Deserialize, Serialize};

/// Version of the manifest format; bumped on any incompatible change.
pub const MANIFEST_VERSION: u32 = 1;

/// Every tuned function of one crate, as one build saw them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_VERSION`].
    pub version: u32,
    /// The package name (`CARGO_PKG_NAME`).
    pub package: String,
    /// The value of `GPUTUNE_VARIANTS` this build saw (empty: a production build).
    pub selection: String,
    /// The tuned functions, in file order.
    pub functions: Vec<Function>,
}

/// One `#[tune]` function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Function {
    /// Its name; unique in the crate.
    pub name: String,
    /// The source file, relative to the package root.
    pub file: String,
    /// The attribute's tokens, as written.
    pub attribute: String,
    /// Parameters in declaration order.
    pub params: Vec<Param>,
    /// The base value of each parameter.
    pub base: serde_json::Map<String, serde_json::Value>,
    /// Number of points after `require`.
    pub space_size: usize,
    /// Every point's label, in enumeration order.
    pub labels: Vec<String>,
    /// The function's generic type parameters, which `{ct}` type axes of the same name select.
    pub type_generics: Vec<String>,
    /// The function's const generic parameters.
    pub const_generics: Vec<String>,
    /// Labels of the arms this build compiled in (`base` first).
    pub compiled: Vec<String>,
    /// Entries applied from `gputune.toml`.
    pub applied: Vec<Applied>,
    /// The runtime axis the function dispatches per-size winners on (`size(Elements = …)`),
    /// if it declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_axis: Option<String>,
}

/// One tuned parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// As written (`ipt`).
    pub name: String,
    /// The const the body sees (`IPT`).
    #[serde(rename = "const")]
    pub const_name: String,
    /// Its Rust type (`usize`, `isize`, `bool`, `&str`).
    #[serde(rename = "type")]
    pub rust_type: String,
    /// `range`, `pow2` or `list`.
    pub form: String,
    /// Its values in order.
    pub values: Vec<serde_json::Value>,
}

/// An entry of `gputune.toml` compiled into the production dispatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    /// The compile-time workload (`T=f32`, or `*` for any).
    pub workload: String,
    /// The device key: an architecture (`sm_90`, `cpu`) or a device model (`NVIDIA H200`).
    /// Named `arch` since manifests before `gputune.toml` version 2, where it was always one.
    pub arch: String,
    /// Whether [`arch`](Self::arch) names a device model rather than an architecture.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model: bool,
    /// The sizes a per-size entry holds for: per axis of the function's `size(…)`, in its
    /// order, `[first, last]` (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<[u64; 2]>>,
    /// The label of the applied point.
    pub label: String,
}

impl Manifest {
    /// The function named `name`.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}
