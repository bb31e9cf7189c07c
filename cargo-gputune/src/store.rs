//! The SQLite store: every measurement, committed as it comes.
//!
//! Schema version [`SCHEMA_VERSION`], documented in `docs/store.md`. One row per
//! (revision, device, package, bench, compile-time workload, variant, runtime workload); a
//! variant that did not get as far as a measurement (a failed build, a crash) has one row with
//! runtime workload `*`. A rerun skips the keys that are there. WAL mode, so `report` can
//! read while `search` writes.

use std::path::Path;

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::cli::Usage;

/// Held by a search for as long as it writes to a store: two searches on one store would
/// build and measure the same variants twice, and on a GPU disturb each other's timings, so
/// the second one stops with a plain message instead. The lock is an `flock` on
/// `STORE.lock`, which the kernel drops when the process dies, however it dies.
pub struct SearchLock {
    _file: std::fs::File,
}

impl SearchLock {
    /// Takes the lock of the store at `path`, or says who holds it.
    pub fn acquire(path: &Path) -> Result<SearchLock> {
        use std::io::{Read, Seek, Write};
        use std::os::fd::AsRawFd;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let lock_path = path.with_extension("lock");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .with_context(|| format!("cannot open {}", lock_path.display()))?;
        // SAFETY: flock on a descriptor this function owns; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Err(anyhow::Error::new(Usage(format!(
                "the store {} is busy: another `cargo gputune search` (pid {}) is writing to \
                 it; wait for it to finish, or give this one its own store with --db FILE",
                path.display(),
                holder
                    .trim()
                    .parse::<u32>()
                    .map_or("unknown".into(), |p| p.to_string())
            ))));
        }
        file.set_len(0)?;
        file.rewind()?;
        write!(file, "{}", std::process::id())?;
        Ok(SearchLock { _file: file })
    }
}

/// Version of the schema this build reads and writes.
pub const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    revision      TEXT NOT NULL,
    device        TEXT NOT NULL,
    arch          TEXT NOT NULL,
    package       TEXT NOT NULL,
    bench         TEXT NOT NULL,
    function      TEXT NOT NULL,
    ct_workload   TEXT NOT NULL,
    variant       TEXT NOT NULL,
    rt_workload   TEXT NOT NULL,
    rt_weight     REAL NOT NULL,
    status        TEXT NOT NULL,
    message       TEXT,
    center        REAL,
    noise         REAL,
    bandwidth     REAL,
    samples       TEXT NOT NULL,
    build_seconds REAL,
    run_seconds   REAL,
    created       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (revision, device, package, bench, ct_workload, variant, rt_workload)
);
CREATE TABLE IF NOT EXISTS spaces (
    package    TEXT NOT NULL,
    function   TEXT NOT NULL,
    space_size INTEGER NOT NULL,
    attribute  TEXT NOT NULL,
    PRIMARY KEY (package, function)
);
";

/// One measured runtime workload of one variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Toolchain and source revision.
    pub revision: String,
    /// Device identity (name, compute capability, SM count, bus width, ECC).
    pub device: String,
    /// `sm_90` or `cpu`.
    pub arch: String,
    /// Package.
    pub package: String,
    /// Bench.
    pub bench: String,
    /// Tuned function.
    pub function: String,
    /// `T=f32`, or `*` without compile-time axes.
    pub ct_workload: String,
    /// `base` or a label.
    pub variant: String,
    /// `Elements{io}=2^20`.
    pub rt_workload: String,
    /// The runtime workload's `{io}` weight before normalisation.
    pub rt_weight: f64,
    /// `ok`, `timeout`, `failed`, … (DESIGN's statuses).
    pub status: String,
    /// Why, when not ok.
    pub message: Option<String>,
    /// Median cold GPU time (s).
    pub center: Option<f64>,
    /// Relative stdev of the cold GPU times.
    pub noise: Option<f64>,
    /// Bytes per second.
    pub bandwidth: Option<f64>,
    /// Every kept cold GPU sample (s).
    pub samples: Vec<f64>,
    /// Wall time of the build that produced the binary.
    pub build_seconds: Option<f64>,
    /// Wall time of the bench process.
    pub run_seconds: Option<f64>,
}

/// The store.
pub struct Store {
    conn: Connection,
}

impl Store {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open the store {}", path.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        let store = Store { conn };
        // Nothing is written to a file that turns out not to be ours (a corrupt or foreign
        // one): it is the user's to look at.
        store.init().map_err(|e| {
            anyhow::Error::new(Usage(format!(
                "{} is not a usable gputune store ({e:#}); move it away or pass another --db",
                path.display()
            )))
        })?;
        Ok(store)
    }

    fn init(&self) -> Result<()> {
        // Read before anything is written: switching to WAL changes the file's header.
        let tables: Vec<String> = self
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "meta") {
            bail!("it holds tables but no gputune metadata (a foreign database?)");
        }
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            bail!("cannot switch to WAL mode (got {mode})");
        }
        self.conn.execute_batch(SCHEMA)?;
        let version: Option<String> = self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()?;
        match version {
            None => {
                self.conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                    [SCHEMA_VERSION.to_string()],
                )?;
            }
            Some(v) if v == SCHEMA_VERSION.to_string() => {}
            Some(v) => {
                bail!("schema version {v}; this cargo-gputune reads version {SCHEMA_VERSION}")
            }
        }
        Ok(())
    }

    /// Stores the rows of one variant (replacing earlier ones with the same keys) in one
    /// transaction, committed at once: a kill leaves all of them or none, so a resumed search
    /// never takes a half-stored variant for a finished one.
    pub fn put(&self, rows: &[Measurement]) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        for m in rows {
            Self::insert(&tx, m)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn insert(conn: &Connection, m: &Measurement) -> Result<()> {
        conn.execute(
            "INSERT OR REPLACE INTO results (revision, device, arch, package, bench, function,
                ct_workload, variant, rt_workload, rt_weight, status, message, center, noise,
                bandwidth, samples, build_seconds, run_seconds)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
            params![
                m.revision,
                m.device,
                m.arch,
                m.package,
                m.bench,
                m.function,
                m.ct_workload,
                m.variant,
                m.rt_workload,
                m.rt_weight,
                m.status,
                m.message,
                m.center,
                m.noise,
                m.bandwidth,
                serde_json::to_string(&m.samples)?,
                m.build_seconds,
                m.run_seconds,
            ],
        )?;
        Ok(())
    }

    /// Records a tuned function's space, for coverage.
    pub fn put_space(
        &self,
        package: &str,
        function: &str,
        size: usize,
        attribute: &str,
    ) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO spaces (package, function, space_size, attribute)
             VALUES (?1, ?2, ?3, ?4)",
            params![package, function, size as i64, attribute],
        )?;
        Ok(())
    }

    /// `(space size, attribute)` of a tuned function.
    pub fn space(&self, package: &str, function: &str) -> Result<Option<(usize, String)>> {
        Ok(self
            .conn
            .query_row(
                "SELECT space_size, attribute FROM spaces WHERE package = ?1 AND function = ?2",
                params![package, function],
                |r| Ok((r.get::<_, i64>(0)? as usize, r.get(1)?)),
            )
            .optional()?)
    }

    /// Every measurement, oldest first.
    pub fn measurements(&self) -> Result<Vec<Measurement>> {
        let mut stmt = self.conn.prepare(
            "SELECT revision, device, arch, package, bench, function, ct_workload, variant,
                    rt_workload, rt_weight, status, message, center, noise, bandwidth, samples,
                    build_seconds, run_seconds
             FROM results ORDER BY created, rowid",
        )?;
        let rows = stmt
            .query_map([], |r| {
                let samples: String = r.get(15)?;
                Ok(Measurement {
                    revision: r.get(0)?,
                    device: r.get(1)?,
                    arch: r.get(2)?,
                    package: r.get(3)?,
                    bench: r.get(4)?,
                    function: r.get(5)?,
                    ct_workload: r.get(6)?,
                    variant: r.get(7)?,
                    rt_workload: r.get(8)?,
                    rt_weight: r.get(9)?,
                    status: r.get(10)?,
                    message: r.get(11)?,
                    center: r.get(12)?,
                    noise: r.get(13)?,
                    bandwidth: r.get(14)?,
                    samples: serde_json::from_str(&samples).unwrap_or_default(),
                    build_seconds: r.get(16)?,
                    run_seconds: r.get(17)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// `PRAGMA integrity_check`: `ok` for a sound file.
    #[cfg(test)]
    pub fn integrity(&self) -> Result<String> {
        Ok(self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(variant: &str, rt: &str) -> Measurement {
        Measurement {
            revision: "r".into(),
            device: "d".into(),
            arch: "cpu".into(),
            package: "p".into(),
            bench: "b".into(),
            function: "f".into(),
            ct_workload: "T=f32".into(),
            variant: variant.into(),
            rt_workload: rt.into(),
            rt_weight: 0.6,
            status: "ok".into(),
            message: None,
            center: Some(1e-3),
            noise: Some(0.01),
            bandwidth: None,
            samples: vec![1e-3, 1.1e-3],
            build_seconds: Some(1.0),
            run_seconds: Some(0.5),
        }
    }

    #[test]
    fn round_trips_and_replaces_by_key() {
        let dir = std::env::temp_dir().join(format!("gputune-store-{}", std::process::id()));
        let path = dir.join("s.db");
        let _ = std::fs::remove_file(&path);
        let store = Store::open(&path).expect("opens");
        store.put(&[sample("base", "N=1")]).expect("put");
        store.put(&[sample("x_1", "N=1")]).expect("put");
        let mut again = sample("x_1", "N=1");
        again.center = Some(2e-3);
        store.put(std::slice::from_ref(&again)).expect("replace");
        let all = store.measurements().expect("read");
        assert_eq!(all.len(), 2);
        assert_eq!(all[1], again);
        assert_eq!(store.integrity().expect("check"), "ok");
        drop(store);
        assert!(Store::open(&path).is_ok(), "reopens");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn foreign_and_corrupt_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("gputune-store-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let foreign = dir.join("foreign.db");
        let conn = Connection::open(&foreign).expect("sqlite");
        conn.execute_batch("CREATE TABLE t (x)").expect("table");
        drop(conn);
        let err = format!("{:#}", Store::open(&foreign).err().expect("refused"));
        assert!(err.contains("foreign database"), "{err}");
        let junk = dir.join("junk.db");
        std::fs::write(&junk, b"this is not sqlite at all, not even close........").expect("write");
        assert!(Store::open(&junk).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
