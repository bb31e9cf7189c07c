//! Helpers of the end-to-end tests in `tests/`: build a target of the workspace and drive
//! `cargo gputune` on a package, as a user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub mod browser;
pub mod fuzz;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Builds a target (`cargo build ARGS`) and returns the executable named `name`.
pub fn executable(args: &[&str], name: &str) -> PathBuf {
    let out = Command::new(cargo())
        .args(["build", "--quiet", "--message-format=json"])
        .args(args)
        .env_remove("GPUTUNE_VARIANTS")
        .current_dir(root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("an executable")
}

/// The `cargo-gputune` binary, built for the tests.
pub fn cargo_gputune() -> PathBuf {
    executable(
        &["-p", "cargo-gputune", "--bin", "cargo-gputune"],
        "cargo-gputune",
    )
}

/// The command `cargo gputune -p PACKAGE --profile dev --db DB`, to which a test adds its
/// subcommand.
pub fn gputune_command(bin: &Path, package: &str, db: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("gputune")
        .args(["-p", package, "--profile", "dev", "--db"])
        .arg(db)
        .env_remove("GPUTUNE_VARIANTS")
        // `check` appends to a GitHub Actions step summary: not the tests' to write.
        .env_remove("GITHUB_STEP_SUMMARY")
        .current_dir(root());
    cmd
}

/// Runs `cargo gputune -p PACKAGE … ARGS` to the end.
pub fn gputune(bin: &Path, package: &str, db: &Path, args: &[&str]) -> Output {
    gputune_command(bin, package, db)
        .args(args)
        .output()
        .expect("cargo-gputune runs")
}

/// Stdout and stderr of a finished command, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A fresh directory under the system's temporary directory.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gputune-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Held by the tests of one test binary that build the spin fixture: one of them writes its
/// gputune.toml, which would change what the others build halfway through. (Test binaries
/// run one after another, so a lock per binary is enough.)
pub fn spin_lock() -> std::sync::MutexGuard<'static, ()> {
    static SPIN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SPIN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Says on stderr, past libtest's capture (so it shows without `--nocapture` too), that the
/// running test checked nothing on this machine: a pass that returned early must not read as a
/// check that passed.
pub fn skipped(why: &str) {
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("test").to_owned();
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
}

/// Builds the spin fixture's whole space into the bundle `dir/bundle` (`search --build-only`,
/// `batch_size` variants per binary, `samples` cold samples a state, no hot loop) and returns
/// its path.
pub fn spin_bundle(bin: &Path, dir: &Path, batch_size: usize, samples: usize) -> PathBuf {
    let bundle = dir.join("bundle");
    let (batch, samples) = (batch_size.to_string(), samples.to_string());
    let out = gputune(
        bin,
        "gputune-fixture-spin",
        &dir.join("unused.db"),
        &[
            "search",
            "--build-only",
            "--bundle",
            bundle.to_str().expect("utf-8"),
            "--batch-size",
            &batch,
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            &samples,
            "--no-batch",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    bundle
}
