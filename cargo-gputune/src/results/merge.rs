//! `cargo gputune merge`: several stores into one, for the shards of a bundle
//! (`run-bundle --shard I/N`) or searches of one revision on several machines.
//!
//! The rules (`docs/store.md`):
//!
//! - The unit of a merge is a variant's measurement on one compile-time workload: its rows
//!   (one per runtime workload) under one (revision, device, package, bench, ct_workload,
//!   variant), which a search stores in one transaction. A unit the target lacks is copied,
//!   `created` stamps included.
//! - A unit held on both sides is the same measurement taken twice: base, which every shard
//!   measures, or a variant measured again. The one stored last (the latest `created` of its
//!   rows) is kept whole, so the result does not depend on the order of the sources, and
//!   merging again changes nothing. (Equal stamps with different rows: the greater rows in a
//!   fixed order, which only keeps it deterministic.)
//! - Everything is checked before anything is written: a source that is not a gputune store,
//!   or of a schema this build does not read, one that holds a package's bench at another
//!   revision than the target (or an earlier source) does, or another space for a tuned
//!   function, is refused with exit 2 and the target is left as it was.
//! - Each source is then written in one transaction, under the target's search lock.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use gputune_protocol::StopReason;

use crate::host::output::Output;
use crate::host::usage::Usage;
use crate::results::present;
use crate::results::store::energy::{Energy, RowKey};
use crate::results::store::{Dated, Space, Store};

/// What one source brought to the target, counted in variant measurements (a variant on a
/// compile-time workload; base included).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The source.
    pub source: PathBuf,
    /// New to the target.
    pub added: usize,
    /// The target held an older measurement of the same, replaced by the source's.
    pub replaced: usize,
    /// The target held the same, or a newer measurement, which it keeps.
    pub kept: usize,
    /// Rows written.
    pub rows: usize,
    /// Spaces of tuned functions new to the target.
    pub spaces: usize,
}

/// (revision, device, package, bench, ct_workload, variant): one variant measurement.
type Unit = (String, String, String, String, String, String);

fn unit_of(d: &Dated) -> Unit {
    let m = &d.measurement;
    (
        m.revision.clone(),
        m.device.clone(),
        m.package.clone(),
        m.bench.clone(),
        m.ct_workload.clone(),
        m.variant.clone(),
    )
}

/// A source's rows by unit, each unit's rows in runtime-workload order.
fn by_unit(rows: Vec<Dated>) -> BTreeMap<Unit, Vec<Dated>> {
    let mut out: BTreeMap<Unit, Vec<Dated>> = BTreeMap::new();
    for d in rows {
        out.entry(unit_of(&d)).or_default().push(d);
    }
    for rows in out.values_mut() {
        rows.sort_by(|a, b| a.measurement.rt_workload.cmp(&b.measurement.rt_workload));
    }
    out
}

/// How `a` compares with `b`, two measurements of one unit: the one stored last is greater;
/// on equal stamps, the rows decide in a fixed (if arbitrary) order; `Equal` for the same
/// rows.
fn recency(a: &[Dated], b: &[Dated]) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let last = |rows: &[Dated]| rows.iter().map(|d| d.created.clone()).max();
    last(a)
        .cmp(&last(b))
        .then_with(|| format!("{a:?}").cmp(&format!("{b:?}")))
}

/// One source, read whole before anything is written.
struct Source {
    path: PathBuf,
    units: BTreeMap<Unit, Vec<Dated>>,
    spaces: Vec<Space>,
    /// Its energy rows (schema 6), copied with the rows they belong to.
    energy: BTreeMap<RowKey, Energy>,
}

impl Source {
    fn read(path: &Path) -> Result<Source> {
        // Refuses a missing, foreign or corrupt file, and a schema other than 1 to 4, with
        // a usage error that names it.
        let store = Store::open_read_only(path)?;
        let mut rows = store
            .dated_measurements()
            .with_context(|| format!("cannot read the store {}", path.display()))?;
        if store.schema() == 1 {
            // As a search migrates a version-1 store: a raced row said so in its message.
            for d in &mut rows {
                let m = &mut d.measurement;
                if m.stop.is_none()
                    && m.message
                        .as_deref()
                        .is_some_and(|t| t.starts_with("raced:"))
                {
                    m.stop = Some(StopReason::Raced);
                }
            }
        }
        Ok(Source {
            path: path.to_path_buf(),
            units: by_unit(rows),
            spaces: store.spaces()?,
            energy: store.energies()?.into_iter().collect(),
        })
    }
}

/// What the target holds, and what the sources checked so far would add: the revisions of
/// each (package, bench) and the space of each tuned function, with where each was first
/// seen, for the messages.
#[derive(Default)]
struct Held {
    revisions: BTreeMap<(String, String), (BTreeSet<String>, String)>,
    spaces: BTreeMap<(String, String), (Space, String)>,
}

impl Held {
    fn add<'a>(&mut self, units: impl Iterator<Item = &'a Unit>, spaces: &[Space], origin: &str) {
        for (revision, _, package, bench, _, _) in units {
            self.revisions
                .entry((package.clone(), bench.clone()))
                .or_insert_with(|| (BTreeSet::new(), origin.to_string()))
                .0
                .insert(revision.clone());
        }
        for sp in spaces {
            self.spaces
                .entry((sp.package.clone(), sp.function.clone()))
                .or_insert_with(|| (sp.clone(), origin.to_string()));
        }
    }

    /// Refuses a source that measured a bench at another revision, or has another space for
    /// a tuned function, than what is held.
    fn check(&self, src: &Source) -> Result<()> {
        let usage = |m: String| Err(anyhow::Error::new(Usage(m)));
        let mut revisions: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
        for (revision, _, package, bench, _, _) in src.units.keys() {
            revisions
                .entry((package, bench))
                .or_default()
                .insert(revision);
        }
        for ((package, bench), revs) in revisions {
            let key = (package.to_string(), bench.to_string());
            let Some((held, origin)) = self.revisions.get(&key) else {
                continue;
            };
            if let Some(other) = revs.iter().find(|r| !held.contains(**r)) {
                return usage(format!(
                    "cannot merge {}: it holds package `{package}`, bench `{bench}` at revision \
                     {other}, and {origin} at {}; another revision is other code, toolchain \
                     or measurement settings, whose times do not compare. Merge only the \
                     stores of one bundle (or of searches of one revision), or merge into an \
                     empty --db store",
                    src.path.display(),
                    held.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        for sp in &src.spaces {
            let key = (sp.package.clone(), sp.function.clone());
            let Some((held, origin)) = self.spaces.get(&key) else {
                continue;
            };
            if held != sp {
                return usage(format!(
                    "cannot merge {}: its space of `{}::{}` is {} `{}`, and that of {origin} is \
                     {} `{}`: another #[tune] space, whose labels mean other variants",
                    src.path.display(),
                    sp.package,
                    sp.function,
                    present::count(sp.size, "variant"),
                    sp.attribute,
                    present::count(held.size, "variant"),
                    held.attribute
                ));
            }
        }
        Ok(())
    }
}

/// Merges the stores at `sources` into `target`; see the module's rules. The caller holds the
/// target's [`crate::results::store::SearchLock`].
pub fn merge(target: &Store, sources: &[PathBuf], out: &mut Output) -> Result<Vec<Merged>> {
    let me = std::fs::canonicalize(target.path())
        .with_context(|| format!("cannot find {}", target.path().display()))?;
    let mut read = Vec::new();
    for path in sources {
        if std::fs::canonicalize(path).is_ok_and(|p| p == me) {
            return Err(anyhow::Error::new(Usage(format!(
                "{} is the target of the merge (--db); name it only once",
                path.display()
            ))));
        }
        read.push(Source::read(path)?);
    }
    let target_origin = format!("the target {}", target.path().display());
    let mut current: BTreeMap<Unit, (Vec<Dated>, String)> = by_unit(target.dated_measurements()?)
        .into_iter()
        .map(|(k, rows)| (k, (rows, target_origin.clone())))
        .collect();
    let target_spaces = target.spaces()?;
    let mut held = Held::default();
    held.add(current.keys(), &target_spaces, &target_origin);
    for src in &read {
        held.check(src)?;
        held.add(
            src.units.keys(),
            &src.spaces,
            &src.path.display().to_string(),
        );
    }

    let mut spaces: BTreeSet<(String, String)> = target_spaces
        .into_iter()
        .map(|s| (s.package, s.function))
        .collect();
    // (package, bench, device) → where the kept base came from, where it was measured twice.
    let mut bases: BTreeMap<(String, String, String), BTreeSet<String>> = BTreeMap::new();
    let mut report = Vec::new();
    for src in read {
        let origin = src.path.display().to_string();
        let mut merged = Merged {
            source: src.path.clone(),
            ..Merged::default()
        };
        let mut writes: Vec<(Unit, Vec<Dated>)> = Vec::new();
        for (unit, rows) in src.units {
            match current.get(&unit) {
                None => {
                    merged.added += 1;
                    writes.push((unit, rows));
                }
                Some((have, have_origin)) => {
                    let newer = recency(&rows, have) == Ordering::Greater;
                    if unit.5 == "base" && rows != *have {
                        let kept = if newer { &origin } else { have_origin };
                        bases
                            .entry((unit.2.clone(), unit.3.clone(), unit.1.clone()))
                            .or_default()
                            .insert(kept.clone());
                    }
                    if newer {
                        merged.replaced += 1;
                        writes.push((unit, rows));
                    } else {
                        merged.kept += 1;
                    }
                }
            }
        }
        let new_spaces: Vec<Space> = src
            .spaces
            .into_iter()
            .filter(|s| !spaces.contains(&(s.package.clone(), s.function.clone())))
            .collect();
        merged.rows = writes.iter().map(|(_, r)| r.len()).sum();
        merged.spaces = new_spaces.len();
        // Nothing to write, no transaction: a merge that changes nothing leaves the file as
        // it was.
        if !writes.is_empty() || !new_spaces.is_empty() {
            let slices: Vec<&[Dated]> = writes.iter().map(|(_, r)| r.as_slice()).collect();
            target
                .replace_variants(&slices, &new_spaces)
                .with_context(|| format!("merging {} into {}", origin, target.path().display()))?;
            // The energy measured with the rows written, where the source has it.
            let energy: Vec<(RowKey, Energy)> = writes
                .iter()
                .flat_map(|(_, rows)| rows.iter())
                .filter_map(|d| {
                    let k = RowKey::of(&d.measurement);
                    src.energy.get(&k).map(|e| (k, e.clone()))
                })
                .collect();
            if !energy.is_empty() {
                target.put_energy(&energy).with_context(|| {
                    format!(
                        "merging {}'s energy into {}",
                        origin,
                        target.path().display()
                    )
                })?;
            }
        }
        for s in new_spaces {
            spaces.insert((s.package, s.function));
        }
        for (unit, rows) in writes {
            current.insert(unit, (rows, origin.clone()));
        }
        out.status(&format!(
            "Merged {origin}: {} added, {} replaced by newer measurements, {} already held",
            present::count(merged.added, "variant measurement"),
            merged.replaced,
            merged.kept
        ));
        report.push(merged);
    }
    for ((package, bench, device), kept) in bases {
        out.status(&format!(
            "note: base of {package}/{bench} on {} was measured in more than one store; kept the \
             one measured last (from {}) as the base row reports show; each variant is scored \
             against base measured in its own process",
            device_name(&device),
            kept.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(report)
}

/// The name part of a device key (`NVIDIA H100|sm_90|sms=132|…`).
fn device_name(device: &str) -> &str {
    device.split('|').next().unwrap_or(device)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gputune_protocol::Status;

    use crate::results::store::Measurement;

    fn row(revision: &str, variant: &str, rt: &str, center: f64, created: &str) -> Dated {
        Dated {
            measurement: Measurement {
                revision: revision.into(),
                device: "CPU|cpu".into(),
                arch: "cpu".into(),
                package: "p".into(),
                bench: "b".into(),
                function: "f".into(),
                ct_workload: "*".into(),
                variant: variant.into(),
                rt_workload: rt.into(),
                rt_weight: 1.0,
                status: Status::Ok,
                message: None,
                center: Some(center),
                noise: Some(0.01),
                bandwidth: None,
                samples: vec![center; 3],
                build_seconds: Some(1.0),
                run_seconds: Some(0.5),
                stop: Some(StopReason::Criterion),
                control: Vec::new(),
                kernels: Vec::new(),
                provenance: None,
                sm_clocks: Vec::new(),
            },
            created: created.into(),
        }
    }

    fn space(size: usize) -> Space {
        Space {
            package: "p".into(),
            function: "f".into(),
            size,
            attribute: format!("#[tune(x = [1..={size}])]"),
        }
    }

    /// A store at `dir/name` holding `variants` (each one unit's rows) and `spaces`.
    fn store(dir: &Path, name: &str, variants: &[Vec<Dated>], spaces: &[Space]) -> PathBuf {
        let path = dir.join(name);
        let s = Store::open(&path).expect("opens");
        let slices: Vec<&[Dated]> = variants.iter().map(Vec::as_slice).collect();
        s.replace_variants(&slices, spaces).expect("writes");
        path
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("gputune-merge-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        dir
    }

    /// Two shards: base in both (shard 2's measured later), one variant each.
    fn shards(dir: &Path) -> (PathBuf, PathBuf) {
        let base = |c, t: &str| vec![row("r", "base", "N=1", c, t), row("r", "base", "N=2", c, t)];
        let mut x_1 = row("r", "x_1", "N=1", 1.0, "2025-01-01T00:00:01.000Z");
        x_1.measurement.kernels = vec![gputune_protocol::KernelRecord {
            name: "scale".into(),
            registers: 40,
            local_bytes: 8,
            shared_bytes: 0,
            options: vec!["--maxrregcount=40".into()],
        }];
        let a = store(
            dir,
            "a.db",
            &[base(8.0, "2025-01-01T00:00:00.000Z"), vec![x_1]],
            &[space(4)],
        );
        let b = store(
            dir,
            "b.db",
            &[
                base(8.5, "2025-01-01T00:00:00.500Z"),
                vec![row("r", "x_2", "N=1", 2.0, "2025-01-01T00:00:02.000Z")],
            ],
            &[space(4)],
        );
        (a, b)
    }

    fn contents(path: &Path) -> (Vec<Dated>, Vec<Space>) {
        let s = Store::open_read_only(path).expect("reads");
        let mut rows = s.dated_measurements().expect("rows");
        rows.sort_by_key(|d| format!("{:?}", unit_of(d)) + &d.measurement.rt_workload);
        (rows, s.spaces().expect("spaces"))
    }

    fn merge_into(target: &Path, sources: &[PathBuf]) -> Result<Vec<Merged>> {
        let t = Store::open(target)?;
        merge(&t, sources, &mut Output::silent())
    }

    fn refusal(target: &Path, sources: &[PathBuf]) -> String {
        let e = merge_into(target, sources).expect_err("refused");
        assert!(
            e.chain().any(|c| c.is::<Usage>()),
            "a usage error (exit 2): {e:#}"
        );
        format!("{e:#}")
    }

    #[test]
    fn disjoint_shards_merge_with_the_base_measured_last_in_any_order() {
        let dir = temp("disjoint");
        let (a, b) = shards(&dir);
        let t = dir.join("t.db");
        let merged = merge_into(&t, &[a.clone(), b.clone()]).expect("merges");
        assert_eq!(
            (merged[0].added, merged[0].rows, merged[0].spaces),
            (2, 3, 1)
        );
        assert_eq!(
            (
                merged[1].added,
                merged[1].replaced,
                merged[1].kept,
                merged[1].spaces
            ),
            (1, 1, 0, 0),
            "shard 2's base is newer"
        );
        let (rows, spaces) = contents(&t);
        let variants: Vec<(&str, f64)> = rows
            .iter()
            .map(|d| {
                (
                    d.measurement.variant.as_str(),
                    d.measurement.center.unwrap_or(0.0),
                )
            })
            .collect();
        assert_eq!(
            variants,
            [("base", 8.5), ("base", 8.5), ("x_1", 1.0), ("x_2", 2.0)]
        );
        assert_eq!(spaces, [space(4)]);
        // Stamps are copied, so what `report` takes as the latest revision stays so.
        assert_eq!(rows[2].created, "2025-01-01T00:00:01.000Z");
        // And what the kernels compiled to.
        assert_eq!(rows[2].measurement.kernels[0].registers, 40);
        assert!(rows[3].measurement.kernels.is_empty());

        // The other order gives the same store.
        let t2 = dir.join("t2.db");
        merge_into(&t2, &[b, a]).expect("merges");
        assert_eq!(contents(&t2), contents(&t));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn merging_again_changes_nothing() {
        let dir = temp("again");
        let (a, b) = shards(&dir);
        let t = dir.join("t.db");
        merge_into(&t, &[a.clone(), b.clone()]).expect("merges");
        let before = contents(&t);
        let again = merge_into(&t, &[a, b.clone(), b]).expect("merges again");
        assert!(again
            .iter()
            .all(|m| m.rows == 0 && m.added == 0 && m.replaced == 0));
        assert_eq!(again.iter().map(|m| m.kept).collect::<Vec<_>>(), [2, 2, 2]);
        assert_eq!(contents(&t), before);
        // A merged store merges into another as any store.
        let t2 = dir.join("t2.db");
        merge_into(&t2, std::slice::from_ref(&t)).expect("merges");
        assert_eq!(contents(&t2), before);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_newer_measurement_replaces_every_row_of_the_older() {
        let dir = temp("replace");
        // The target's x_1 crashed (one `*` row); the source measured it later, in full.
        let mut crashed = row("r", "x_1", "*", 0.0, "2025-01-01T00:00:00.000Z");
        crashed.measurement.status = Status::Crashed;
        let t = store(&dir, "t.db", &[vec![crashed]], &[]);
        let s = store(
            &dir,
            "s.db",
            &[vec![
                row("r", "x_1", "N=1", 1.0, "2025-01-02T00:00:00.000Z"),
                row("r", "x_1", "N=2", 1.0, "2025-01-02T00:00:00.000Z"),
            ]],
            &[],
        );
        merge_into(&t, &[s]).expect("merges");
        let (rows, _) = contents(&t);
        let rts: Vec<&str> = rows
            .iter()
            .map(|d| d.measurement.rt_workload.as_str())
            .collect();
        assert_eq!(rts, ["N=1", "N=2"], "no `*` row left beside them");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn another_revision_is_refused_and_nothing_is_written() {
        let dir = temp("revision");
        let (a, _) = shards(&dir);
        let other = store(
            &dir,
            "other.db",
            &[vec![row(
                "r2",
                "x_3",
                "N=1",
                3.0,
                "2025-01-03T00:00:00.000Z",
            )]],
            &[],
        );
        let t = dir.join("t.db");
        let err = refusal(&t, &[a.clone(), other.clone()]);
        assert!(
            err.contains("other.db") && err.contains("revision r2"),
            "{err}"
        );
        assert!(
            err.contains("a.db at r"),
            "names where the other came from: {err}"
        );
        assert!(
            contents(&t).0.is_empty(),
            "checked before anything was written"
        );
        merge_into(&t, &[a]).expect("merges");
        let err = refusal(&t, &[other]);
        assert!(
            err.contains("the target") && err.contains("t.db at r"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn another_space_is_refused() {
        let dir = temp("space");
        let (a, _) = shards(&dir);
        let other = store(&dir, "other.db", &[], &[space(6)]);
        let t = dir.join("t.db");
        merge_into(&t, &[a]).expect("merges");
        let err = refusal(&t, &[other]);
        assert!(err.contains("other.db") && err.contains("p::f"), "{err}");
        assert!(
            err.contains("6 variants") && err.contains("4 variants"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_version_1_source_is_merged_as_a_search_would_migrate_it_and_others_refused() {
        let dir = temp("schema");
        let v1 = dir.join("v1.db");
        {
            let conn = rusqlite::Connection::open(&v1).expect("sqlite");
            conn.execute_batch(
                "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO meta VALUES ('schema_version', '1');
                 CREATE TABLE results (revision TEXT NOT NULL, device TEXT NOT NULL,
                     arch TEXT NOT NULL, package TEXT NOT NULL, bench TEXT NOT NULL,
                     function TEXT NOT NULL, ct_workload TEXT NOT NULL, variant TEXT NOT NULL,
                     rt_workload TEXT NOT NULL, rt_weight REAL NOT NULL, status TEXT NOT NULL,
                     message TEXT, center REAL, noise REAL, bandwidth REAL, samples TEXT NOT NULL,
                     build_seconds REAL, run_seconds REAL, created TEXT NOT NULL,
                     PRIMARY KEY (revision, device, package, bench, ct_workload, variant,
                         rt_workload));
                 CREATE TABLE spaces (package TEXT NOT NULL, function TEXT NOT NULL,
                     space_size INTEGER NOT NULL, attribute TEXT NOT NULL,
                     PRIMARY KEY (package, function));
                 INSERT INTO results VALUES ('r', 'CPU|cpu', 'cpu', 'p', 'b', 'f', '*', 'x_1',
                     'N=1', 1.0, 'ok', 'raced: stopped after 20 samples', 1.0, 0.01, NULL,
                     '[1.0]', 1.0, 0.5, '2024-01-01T00:00:00.000Z');",
            )
            .expect("a version-1 store");
        }
        let t = dir.join("t.db");
        merge_into(&t, std::slice::from_ref(&v1)).expect("merges version 1");
        let (rows, _) = contents(&t);
        assert_eq!(rows[0].measurement.stop, Some(StopReason::Raced));
        assert_eq!(rows[0].created, "2024-01-01T00:00:00.000Z");

        // A version from a later cargo-gputune.
        let later = crate::results::store::SCHEMA_VERSION + 1;
        let next = dir.join("next.db");
        std::fs::copy(&v1, &next).expect("copy");
        rusqlite::Connection::open(&next)
            .and_then(|c| c.execute("UPDATE meta SET value = ?1", [later.to_string()]))
            .expect("a later version");
        let err = refusal(&t, &[next]);
        assert!(
            err.contains("next.db") && err.contains(&format!("schema version {later}")),
            "{err}"
        );

        let foreign = dir.join("foreign.db");
        rusqlite::Connection::open(&foreign)
            .and_then(|c| c.execute_batch("CREATE TABLE t (x)"))
            .expect("foreign");
        let err = refusal(&t, &[foreign]);
        assert!(
            err.contains("foreign.db") && err.contains("foreign database"),
            "{err}"
        );
        let err = refusal(&t, &[dir.join("missing.db")]);
        assert!(err.contains("no store at"), "{err}");
        let err = refusal(&t, std::slice::from_ref(&t));
        assert!(err.contains("is the target"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
