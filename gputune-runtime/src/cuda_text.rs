//! What CUDA source and PTX text say about themselves, read without a compiler: which
//! macro names a kernel's source reads (a tuning parameter the source never names only
//! changes the launch, so it is no define and its values share one compilation), and which
//! kernels a PTX text defines; and which names a source declares itself, that a parameter's
//! define of the same name would break ([`declared`]).

use std::collections::HashSet;

// The kernel handle checks its defines against it (NVRTC), and so does the build helper
// (nvcc), where a file's own `#define` would otherwise win silently over `-D`.
mod declared;

pub use declared::declared;
#[cfg(feature = "cuda")]
pub use declared::Declared;

/// Every identifier of C++ `text`, comments left out (string and character literals too).
pub fn identifiers(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i += 2;
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.insert(text[start..i].to_string());
        } else if c.is_ascii_digit() {
            // A number's suffix (`1.0f`, `0x1F`) is not an identifier.
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The kernel symbols a PTX text defines (`.visible .entry NAME(`), in order.
pub fn ptx_entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| {
            let rest = l.trim_start();
            let rest = rest.strip_prefix(".visible").unwrap_or(rest).trim_start();
            let rest = rest.strip_prefix(".entry")?.trim_start();
            let end = rest.find(|c: char| c == '(' || c.is_whitespace())?;
            Some(rest[..end].to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_outside_comments_and_literals() {
        let ids = identifiers(
            "// TPB in a comment\n/* IPT too */ #define N 4\n__global__ void k(float* y) {\n\
             const char* s = \"BLOCK\"; y[0] = 1.0f + ITEMS * 0x1Fu; }",
        );
        for id in ["N", "__global__", "k", "float", "y", "ITEMS", "define"] {
            assert!(ids.contains(id), "{id}");
        }
        for id in ["TPB", "IPT", "BLOCK", "f", "x1Fu", "Fu"] {
            assert!(!ids.contains(id), "{id}");
        }
    }
}
