//! Bad input gets one clear message and exit 2, and leaves what was there untouched:
//! a malformed gputune.toml, a corrupt or foreign store, an unknown package or bench, a space
//! that filters leave empty, and a busy store. (A missing driver: bench exit 3, which
//! `protocol::check_exit` turns into exit 2; unit-tested there.)

use std::path::Path;

use gputune_tests::{cargo_gputune, gputune, root, temp_dir, text};

const SPIN: &str = "gputune-fixture-spin";

fn assert_exit_2(out: &std::process::Output, needle: &str) {
    assert_eq!(out.status.code(), Some(2), "{}", text(out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(needle), "expected `{needle}` in: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Writes a file for the length of a test, and removes it however the test ends.
struct Scratch<'p>(&'p Path);

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}

#[test]
fn a_corrupt_or_foreign_store_is_refused_and_left_as_it_was() {
    let bin = cargo_gputune();
    let dir = temp_dir("bad-store");
    let corrupt = dir.join("corrupt.db");
    let garbage = b"this is not an SQLite database, whatever its name says\n".repeat(100);
    std::fs::write(&corrupt, &garbage).expect("write");
    for args in [&["report"][..], &["search"][..]] {
        let out = gputune(&bin, SPIN, &corrupt, args);
        assert_exit_2(&out, "is not a usable gputune store");
        assert_eq!(std::fs::read(&corrupt).expect("read"), garbage, "{args:?}");
    }

    let foreign = dir.join("foreign.db");
    {
        let conn = rusqlite::Connection::open(&foreign).expect("sqlite");
        conn.execute_batch("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL);")
            .expect("create");
    }
    let before = std::fs::read(&foreign).expect("read");
    let out = gputune(&bin, SPIN, &foreign, &["report"]);
    assert_exit_2(&out, "a foreign database");
    assert_eq!(std::fs::read(&foreign).expect("read"), before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_targets_and_empty_spaces_are_usage_errors() {
    let _spin = gputune_tests::spin_lock();
    let bin = cargo_gputune();
    let dir = temp_dir("bad-targets");
    let db = dir.join("store.db");
    let out = gputune(&bin, "no-such-package", &db, &["search"]);
    assert_exit_2(&out, "package `no-such-package` is not in the workspace");
    let out = gputune(&bin, SPIN, &db, &["--bench", "nope", "search"]);
    assert_exit_2(&out, "no bench targets found");
    let out = gputune(&bin, SPIN, &db, &["search", "-R", "^matches_nothing$"]);
    assert_exit_2(
        &out,
        "nothing to search: no bench matching `^matches_nothing$`",
    );
    let out = gputune(&bin, SPIN, &db, &["search", "-a", "Steps{io}=12345"]);
    assert_exit_2(&out, "Steps");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_malformed_gputune_toml_fails_the_production_build_plainly() {
    let _spin = gputune_tests::spin_lock();
    let bin = cargo_gputune();
    let dir = temp_dir("bad-toml");
    let db = dir.join("store.db");
    let toml = root().join("tests/fixtures/spin/gputune.toml");
    assert!(!toml.exists(), "another test left {}", toml.display());
    // Built once without the file first: cargo watches gputune.toml only while it exists, so
    // one written by hand afterwards must still reach the production build.
    let before = gputune(&bin, SPIN, &dir.join("before.db"), &["list"]);
    assert!(before.status.success(), "{}", text(&before));
    let _scratch = Scratch(&toml);
    std::fs::write(&toml, "version = 1\n[spin.\"*\".cpu]\nwork = \"eight\"\n").expect("write");
    let out = gputune(&bin, SPIN, &db, &["search"]);
    assert_exit_2(&out, "the production build of `spin` (base) fails");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("gputune.toml"),
        "{}",
        text(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_search_on_a_busy_store_says_so() {
    let _spin = gputune_tests::spin_lock();
    let bin = cargo_gputune();
    let dir = temp_dir("busy");
    let db = dir.join("store.db");
    // Hold the lock the way a running search does.
    let lock = std::fs::File::create(db.with_extension("lock")).expect("lock file");
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let out = gputune(&bin, SPIN, &db, &["search"]);
    assert_exit_2(&out, "is busy: another `cargo gputune search`");
    // Reading is fine meanwhile (WAL).
    drop(lock);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_gpu_search_without_a_driver_is_a_plain_usage_error() {
    if Path::new("/dev/nvidiactl").exists() {
        return gputune_tests::skipped(
            "checks the path without a driver, and this machine has one",
        );
    }
    let bin = cargo_gputune();
    let dir = temp_dir("no-driver");
    let db = dir.join("store.db");
    let out = gputune(
        &bin,
        "gputune-example-stencil",
        &db,
        &["-F", "cuda", "search"],
    );
    assert_exit_2(&out, "no usable device");
    let _ = std::fs::remove_dir_all(&dir);
}
