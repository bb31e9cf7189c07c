//! The SQLite store: every measurement, committed as it comes.
//!
//! Schema version [`SCHEMA_VERSION`], documented in `docs/store.md`. One row per
//! (revision, device, package, bench, compile-time workload, variant, runtime workload); a
//! variant that did not get as far as a measurement (a failed build, a crash) has one row with
//! runtime workload `*`. A rerun skips the keys that are there. WAL mode, so `report` can
//! read while `search` writes.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use gputune_protocol::{KernelRecord, Provenance, Status, StopReason};

use crate::host::lock::{Busy, FileLock};
use crate::host::usage::Usage;

/// Held by a search for as long as it writes to a store: two searches on one store would
/// build and measure the same variants twice, and on a GPU disturb each other's timings, so
/// the second one stops with a plain message instead. The lock is an `flock` on
/// `STORE.lock`, which the kernel drops when the process dies, however it dies.
pub struct SearchLock {
    _lock: FileLock,
}

impl SearchLock {
    /// Takes the lock of the store at `path`, or says who holds it.
    pub fn acquire(path: &Path) -> Result<SearchLock> {
        match FileLock::acquire(&path.with_extension("lock"), Busy::Fail)? {
            Ok(lock) => Ok(SearchLock { _lock: lock }),
            Err(holder) => Err(anyhow::Error::new(Usage(format!(
                "the store {} is busy: another `cargo gputune search` (pid {}) is writing to \
                 it; wait for it to finish, or give this one its own store with --db FILE",
                path.display(),
                holder.map_or("unknown".into(), |p| p.to_string())
            )))),
        }
    }
}

/// The files a command that writes a store is about to create (the store, its write-ahead
/// log and index, its lock), removed again when the command fails: a refused `merge` or
/// `import` leaves no empty store behind. Files that were there before are never touched.
pub struct Created {
    paths: Vec<PathBuf>,
    keep: bool,
}

impl Created {
    /// Notes which of the store's files at `path` do not exist yet.
    pub fn watch(path: &Path) -> Created {
        let mut paths = vec![path.to_path_buf(), path.with_extension("lock")];
        for suffix in ["-wal", "-shm"] {
            paths.push(PathBuf::from(format!("{}{suffix}", path.display())));
        }
        Created {
            paths: paths.into_iter().filter(|p| !p.exists()).collect(),
            keep: false,
        }
    }

    /// The command succeeded: what it created stays.
    pub fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        if !self.keep {
            for p in &self.paths {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// Version of the schema this build reads and writes.
/// 2 added `stop` (why a variant's measurement stopped), 3 `control` (base measured in the
/// same bench process), 4 `kernels` (what the variant's kernels compiled to), 5 the
/// `provenance` table and the rows' `provenance` and `sm_clocks` (where and how each pass
/// measured, and each sample's SM clock), 6 the `energy` table (`search --objective
/// energy|edp`); an older store is migrated when a search opens it, and read as it is.
pub const SCHEMA_VERSION: i64 = 6;

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
    stop          TEXT,
    control       TEXT,
    kernels       TEXT,
    provenance    TEXT,
    sm_clocks     TEXT,
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
    /// What became of the variant on this workload.
    pub status: Status,
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
    /// Why its measurement stopped (`None` when nothing was measured, or in a store of
    /// schema 1). With `samples.len()`, how much it cost and why.
    pub stop: Option<StopReason>,
    /// Base's cold samples (s) on this workload in the same bench process, measured just
    /// before the variant: the control its speedup and significance are judged against, since
    /// drift between processes is larger than the noise within one. Empty for base, and where
    /// no control was measured (then the base row is used).
    pub control: Vec<f64>,
    /// What each kernel the state launched compiled to (registers, local and shared memory)
    /// and the compiler options of the variant, as the bench reported them. Empty for a CPU
    /// bench, a row without a state, and a store of schema 3 or older.
    pub kernels: Vec<KernelRecord>,
    /// Where and how the bench pass that measured it measured (toolchain, host, driver,
    /// NVRTC, clocks, power limit), as the bench sent it; `None` from a bench before protocol
    /// 8, a row without a pass (a failed build), and a store of schema 4 or older.
    pub provenance: Option<std::sync::Arc<Provenance>>,
    /// The SM clock of each of `samples` in Hz, as the bench's timestamp kernels read it;
    /// empty where the bench read none (a CPU) and in a store of schema 4 or older.
    pub sm_clocks: Vec<f64>,
}

/// A stored row and when it was stored (`created`, UTC, `2025-01-31T12:00:00.000Z`: its
/// text orders as its time does).
#[derive(Debug, Clone, PartialEq)]
pub struct Dated {
    /// The row.
    pub measurement: Measurement,
    /// When it was stored.
    pub created: String,
}

/// A tuned function's space, as the `spaces` table holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Space {
    /// Package.
    pub package: String,
    /// Tuned function.
    pub function: String,
    /// Number of variants.
    pub size: usize,
    /// The `#[tune(…)]` attribute.
    pub attribute: String,
}

/// The store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// The schema version of the file: 1 is read as it is by read-only opens.
    schema: i64,
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
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            schema: SCHEMA_VERSION,
        };
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

    /// Opens the store at `path` for reading only: `report`, `apply` and `check` work on a
    /// store in a read-only place (`report --db` anywhere), and never create or change one.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let usage = |m: String| anyhow::Error::new(Usage(m));
        if path.is_dir() {
            return Err(usage(format!(
                "{} is a directory, not a store: pass the store file (a search writes \
                 DIR/gputune.db, or the file given to its --db)",
                path.display()
            )));
        }
        if !path.exists() {
            return Err(usage(format!(
                "no store at {}: run `cargo gputune search` first, or pass --db FILE",
                path.display()
            )));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let open = |uri: &str| -> Result<Store> {
            let conn = Connection::open_with_flags(uri, flags)?;
            conn.busy_timeout(std::time::Duration::from_secs(10))?;
            let mut store = Store {
                conn,
                path: path.to_path_buf(),
                schema: SCHEMA_VERSION,
            };
            store.schema = store.check_schema()?;
            Ok(store)
        };
        let uri = file_uri(path);
        let wal = PathBuf::from(format!("{}-wal", path.display()));
        let pending = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
        // Without a write-ahead log no connection is open (the last one to close folds the
        // log into the file and removes it), so everything committed is in the main file
        // and SQLite may read it as immutable: nothing is created beside it, which a
        // read-only directory would refuse. With a log (a search is writing), a reader
        // shares the writer's index file, as WAL mode intends.
        let first = match open(&if pending {
            uri
        } else {
            format!("{uri}?immutable=1")
        }) {
            Ok(store) => return Ok(store),
            Err(e) => e,
        };
        let cause = if pending {
            format!(
                "; it has a pending write-ahead log ({}): if its directory is read-only, copy \
                 the store together with its -wal file to a writable place",
                wal.display()
            )
        } else {
            String::new()
        };
        Err(usage(format!(
            "{} is not a usable gputune store ({first:#}){cause}",
            path.display()
        )))
    }

    /// Checks, without writing, that the file is a gputune store of this schema version.
    fn check_schema(&self) -> Result<i64> {
        if !self.tables()?.iter().any(|t| t == "meta") {
            bail!("it holds no gputune metadata (a foreign database?)");
        }
        let version = self.schema_version()?;
        match version.as_deref().map(str::parse::<i64>) {
            Some(Ok(v)) if (1..=SCHEMA_VERSION).contains(&v) => Ok(v),
            Some(_) => bail!(
                "schema version {}; this cargo-gputune reads versions 1 to {SCHEMA_VERSION}",
                version.unwrap_or_default()
            ),
            None => bail!("it has no schema version"),
        }
    }

    /// The file this store was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The names of the file's tables.
    fn tables(&self) -> Result<Vec<String>> {
        Ok(self
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?)
    }

    /// `meta.schema_version`, if the file has one.
    fn schema_version(&self) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()?)
    }

    fn init(&mut self) -> Result<()> {
        // Read before anything is written: switching to WAL changes the file's header.
        let tables = self.tables()?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "meta") {
            bail!("it holds tables but no gputune metadata (a foreign database?)");
        }
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            bail!("cannot switch to WAL mode (got {mode})");
        }
        // In WAL mode NORMAL syncs at checkpoints, not at every commit: a killed search still
        // keeps every committed row (only an OS crash or power loss can undo the last few), and
        // a search that commits each variant's rows as they come no longer waits on the disk.
        self.conn.execute_batch("PRAGMA synchronous = NORMAL")?;
        self.conn.execute_batch(SCHEMA)?;
        self.conn.execute_batch(provenance::TABLE)?;
        self.conn.execute_batch(energy::TABLE)?;
        match self.schema_version()? {
            None => {
                self.conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                    [SCHEMA_VERSION.to_string()],
                )?;
            }
            Some(v) if v == SCHEMA_VERSION.to_string() => {}
            Some(v) if ["1", "2", "3", "4", "5"].contains(&v.as_str()) => {
                // 2 added `stop` (a raced variant of a version-1 store said so in its
                // message); 3 added `control`; 4 added `kernels`; 5 added `provenance` (its
                // table is created above) and `sm_clocks`; 6 added the `energy` table
                // (created above). One step after another, in one transaction.
                let tx = self.conn.unchecked_transaction()?;
                if v == "1" {
                    tx.execute_batch(
                        "ALTER TABLE results ADD COLUMN stop TEXT;
                         UPDATE results SET stop = 'raced' WHERE message LIKE 'raced:%';",
                    )?;
                }
                if v == "1" || v == "2" {
                    tx.execute_batch("ALTER TABLE results ADD COLUMN control TEXT;")?;
                }
                if v != "4" && v != "5" {
                    tx.execute_batch("ALTER TABLE results ADD COLUMN kernels TEXT;")?;
                }
                if v != "5" {
                    tx.execute_batch(
                        "ALTER TABLE results ADD COLUMN provenance TEXT;
                         ALTER TABLE results ADD COLUMN sm_clocks TEXT;",
                    )?;
                }
                tx.execute(
                    "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
                    [SCHEMA_VERSION.to_string()],
                )?;
                tx.commit()?;
            }
            Some(v) => {
                bail!("schema version {v}; this cargo-gputune reads versions 1 to {SCHEMA_VERSION}")
            }
        }
        self.schema = SCHEMA_VERSION;
        Ok(())
    }

    /// Stores the rows of one variant (replacing earlier ones with the same keys) in one
    /// transaction, committed at once: a kill leaves all of them or none, so a resumed search
    /// never takes a half-stored variant for a finished one.
    pub fn put(&self, rows: &[Measurement]) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        for m in rows {
            Self::insert(&tx, m, None)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores `rows` and `spaces` in one transaction (`import`): all of them or, if
    /// anything fails, none.
    pub fn put_all(&self, rows: &[Measurement], spaces: &[Space]) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        for m in rows {
            Self::insert(&tx, m, None)?;
        }
        Self::insert_spaces(&tx, spaces)?;
        tx.commit()?;
        Ok(())
    }

    /// Inserts (or replaces) each of `spaces`.
    fn insert_spaces(conn: &Connection, spaces: &[Space]) -> Result<()> {
        for sp in spaces {
            conn.execute(
                "INSERT OR REPLACE INTO spaces (package, function, space_size, attribute)
                 VALUES (?1, ?2, ?3, ?4)",
                params![sp.package, sp.function, sp.size as i64, sp.attribute],
            )?;
        }
        Ok(())
    }

    /// Inserts one row, stamped `created` (a merge keeps the source's stamp), or now.
    fn insert(conn: &Connection, m: &Measurement, created: Option<&str>) -> Result<()> {
        conn.execute(
            "INSERT OR REPLACE INTO results (revision, device, arch, package, bench, function,
                ct_workload, variant, rt_workload, rt_weight, status, message, center, noise,
                bandwidth, samples, build_seconds, run_seconds, stop, control, kernels, provenance,
                sm_clocks, created)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
                ?20, ?21, ?22, ?23, COALESCE(?24, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))",
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
                m.status.as_str(),
                m.message,
                m.center,
                m.noise,
                m.bandwidth,
                serde_json::to_string(&m.samples)?,
                m.build_seconds,
                m.run_seconds,
                m.stop.map(StopReason::as_str),
                (!m.control.is_empty())
                    .then(|| serde_json::to_string(&m.control))
                    .transpose()?,
                (!m.kernels.is_empty())
                    .then(|| serde_json::to_string(&m.kernels))
                    .transpose()?,
                m.provenance
                    .as_deref()
                    .map(|p| provenance::put(conn, p))
                    .transpose()?,
                (!m.sm_clocks.is_empty())
                    .then(|| serde_json::to_string(&m.sm_clocks))
                    .transpose()?,
                created,
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
        Ok(self
            .dated_measurements()?
            .into_iter()
            .map(|d| d.measurement)
            .collect())
    }

    /// Every measurement with its `created` stamp, oldest first.
    pub fn dated_measurements(&self) -> Result<Vec<Dated>> {
        // A version-1 store (read-only here) has no `stop`, nor one of version 2 `control`,
        // nor one of version 3 `kernels`.
        let stop = if self.schema >= 2 { "stop" } else { "NULL" };
        let control = if self.schema >= 3 { "control" } else { "NULL" };
        let kernels = if self.schema >= 4 { "kernels" } else { "NULL" };
        // Nor one of version 4 the provenance.
        let (run, clocks) = if self.schema >= 5 {
            ("provenance", "sm_clocks")
        } else {
            ("NULL", "NULL")
        };
        let provenances = if self.schema >= 5 {
            provenance::all(&self.conn)?
        } else {
            Default::default()
        };
        let mut stmt = self.conn.prepare(&format!(
            "SELECT revision, device, arch, package, bench, function, ct_workload, variant,
                    rt_workload, rt_weight, status, message, center, noise, bandwidth, samples,
                    build_seconds, run_seconds, {stop}, created, {control}, {kernels}, {run},
                    {clocks}
             FROM results ORDER BY created, rowid"
        ))?;
        let rows = stmt
            .query_map([], |r| {
                let samples: String = r.get(15)?;
                let measurement = Measurement {
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
                    status: {
                        let text: String = r.get(10)?;
                        text.parse().map_err(|e| {
                            rusqlite::Error::FromSqlConversionFailure(
                                10,
                                rusqlite::types::Type::Text,
                                Box::new(e),
                            )
                        })?
                    },
                    message: r.get(11)?,
                    center: r.get(12)?,
                    noise: r.get(13)?,
                    bandwidth: r.get(14)?,
                    samples: serde_json::from_str(&samples).unwrap_or_default(),
                    build_seconds: r.get(16)?,
                    run_seconds: r.get(17)?,
                    stop: r
                        .get::<_, Option<String>>(18)?
                        .as_deref()
                        .and_then(StopReason::from_name),
                    control: r
                        .get::<_, Option<String>>(20)?
                        .and_then(|c| serde_json::from_str(&c).ok())
                        .unwrap_or_default(),
                    // What the report shows beside the times, not what they are judged by:
                    // a list this build cannot read (a later protocol's) is left out.
                    kernels: r
                        .get::<_, Option<String>>(21)?
                        .and_then(|k| serde_json::from_str(&k).ok())
                        .unwrap_or_default(),
                    // Shared by the rows of a pass; a digest with no readable document reads
                    // as unknown.
                    provenance: r
                        .get::<_, Option<String>>(22)?
                        .and_then(|key| provenances.get(&key).cloned()),
                    sm_clocks: r
                        .get::<_, Option<String>>(23)?
                        .and_then(|c| serde_json::from_str(&c).ok())
                        .unwrap_or_default(),
                };
                Ok(Dated {
                    measurement,
                    created: r.get(19)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Every tuned function's space.
    pub fn spaces(&self) -> Result<Vec<Space>> {
        let mut stmt = self.conn.prepare(
            "SELECT package, function, space_size, attribute FROM spaces
             ORDER BY package, function",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Space {
                    package: r.get(0)?,
                    function: r.get(1)?,
                    size: r.get::<_, i64>(2)? as usize,
                    attribute: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// The schema version of the file (1 for a version-1 store opened read-only).
    pub fn schema(&self) -> i64 {
        self.schema
    }

    /// Writes what a merge takes from one source, in one transaction: each of `variants` (the
    /// rows of one variant on one compile-time workload, as a search stores them together)
    /// replaces whatever rows the store holds for that variant and workload, and `spaces` are
    /// recorded. A kill leaves all of it or none.
    pub(crate) fn replace_variants(&self, variants: &[&[Dated]], spaces: &[Space]) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        for rows in variants {
            let Some(first) = rows.first() else {
                continue;
            };
            let m = &first.measurement;
            // Rows of runtime workloads that the incoming measurement lacks (an earlier run
            // that got further, or crashed differently) must not survive beside it.
            tx.execute(
                "DELETE FROM results WHERE revision = ?1 AND device = ?2 AND package = ?3
                    AND bench = ?4 AND ct_workload = ?5 AND variant = ?6",
                params![
                    m.revision,
                    m.device,
                    m.package,
                    m.bench,
                    m.ct_workload,
                    m.variant
                ],
            )?;
            for d in rows.iter() {
                Self::insert(&tx, &d.measurement, Some(&d.created))?;
            }
        }
        Self::insert_spaces(&tx, spaces)?;
        tx.commit()?;
        Ok(())
    }

    /// `PRAGMA integrity_check`: `ok` for a sound file.
    #[cfg(test)]
    pub fn integrity(&self) -> Result<String> {
        Ok(self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

/// `file:` URI of a path, percent-encoding what a URI would read as syntax.
fn file_uri(path: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut uri = String::from("file:");
    for b in absolute.as_os_str().as_encoded_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(char::from(*b))
            }
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri
}

pub mod energy;
pub mod provenance;
#[cfg(test)]
mod tests;
