//! Captures what built this copy of gputune-runtime (the compiler and the profile) as
//! compile-time environment variables, so that every bench binary reports them in its
//! provenance (`gputune_runtime::provenance`) without running anything at run time.

use std::process::Command;

fn main() {
    // `RUSTC` is the compiler cargo builds this crate with; a toolchain change rebuilds the
    // crate anyway (cargo's fingerprint holds the compiler's version).
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(&rustc)
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=GPUTUNE_BUILD_RUSTC={version}");
    // Cargo names no profile to build scripts beyond `release`/`debug`; the directory the build
    // goes into (`target/<profile>/build/<crate>-<hash>/out`) names a custom profile too.
    let profile = std::env::var("OUT_DIR")
        .ok()
        .and_then(|out| {
            let path = std::path::PathBuf::from(out);
            let mut parts = path.components().rev().map(|c| c.as_os_str().to_owned());
            // out, <crate>-<hash>, build, <profile>
            parts.nth(3).map(|p| p.to_string_lossy().into_owned())
        })
        .or_else(|| std::env::var("PROFILE").ok())
        .unwrap_or_default();
    println!("cargo:rustc-env=GPUTUNE_BUILD_PROFILE={profile}");
    let opt_level = std::env::var("OPT_LEVEL").unwrap_or_default();
    println!("cargo:rustc-env=GPUTUNE_BUILD_OPT_LEVEL={opt_level}");
    println!("cargo:rerun-if-changed=build.rs");
}
