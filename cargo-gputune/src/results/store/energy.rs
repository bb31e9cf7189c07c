//! The `energy` table (schema 6): what a bench measured of a row's energy under `--energy`
//! (`search --objective energy|edp`), beside the row in `results` with the same key.
//!
//! A table of its own rather than columns of `results`: a time-only search, and everything
//! that reads or writes time, stays as it was, and a row measured without energy has no
//! energy row at all (never a zero).

use rusqlite::{params, Connection};

use super::{Measurement, Store};
use anyhow::Result;

/// The table, created with the others (a store of schema 5 gains it when a search opens it).
pub(super) const TABLE: &str = "
CREATE TABLE IF NOT EXISTS energy (
    revision         TEXT NOT NULL,
    device           TEXT NOT NULL,
    package          TEXT NOT NULL,
    bench            TEXT NOT NULL,
    ct_workload      TEXT NOT NULL,
    variant          TEXT NOT NULL,
    rt_workload      TEXT NOT NULL,
    joules           TEXT NOT NULL,
    watts            TEXT NOT NULL,
    control          TEXT,
    counter_interval REAL,
    PRIMARY KEY (revision, device, package, bench, ct_workload, variant, rt_workload)
);
";

/// A row's key in `results` and `energy`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowKey {
    /// Revision.
    pub revision: String,
    /// Device identity.
    pub device: String,
    /// Package.
    pub package: String,
    /// Bench.
    pub bench: String,
    /// Compile-time workload.
    pub ct_workload: String,
    /// Variant.
    pub variant: String,
    /// Runtime workload.
    pub rt_workload: String,
}

impl RowKey {
    /// The key of `m`.
    pub fn of(m: &Measurement) -> RowKey {
        RowKey {
            revision: m.revision.clone(),
            device: m.device.clone(),
            package: m.package.clone(),
            bench: m.bench.clone(),
            ct_workload: m.ct_workload.clone(),
            variant: m.variant.clone(),
            rt_workload: m.rt_workload.clone(),
        }
    }
}

/// The energy of one row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Energy {
    /// Joules per launch of each energy batch.
    pub joules: Vec<f64>,
    /// Average power of each batch, watts.
    pub watts: Vec<f64>,
    /// Base's joules per launch on this workload in the same bench process, measured just
    /// before the variant: what its energy is judged against (as `control` for its times).
    /// Empty for base and where none was measured.
    pub control: Vec<f64>,
    /// The energy counter's update interval under load, seconds.
    pub counter_interval: Option<f64>,
}

impl Store {
    /// Stores the rows of one variant and their energy in one transaction (as [`Store::put`]).
    pub fn put_with_energy(&self, rows: &[Measurement], energy: &[(RowKey, Energy)]) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        for m in rows {
            Self::insert(&tx, m, None)?;
            // A row measured again keeps no energy of the measurement it replaces.
            let k = RowKey::of(m);
            tx.execute(
                "DELETE FROM energy WHERE revision = ?1 AND device = ?2 AND package = ?3
                    AND bench = ?4 AND ct_workload = ?5 AND variant = ?6 AND rt_workload = ?7",
                params![
                    k.revision,
                    k.device,
                    k.package,
                    k.bench,
                    k.ct_workload,
                    k.variant,
                    k.rt_workload
                ],
            )?;
        }
        insert(&tx, energy)?;
        tx.commit()?;
        Ok(())
    }

    /// Every energy row; none from a store before schema 6.
    pub fn energies(&self) -> Result<Vec<(RowKey, Energy)>> {
        if self.schema < 6 {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(
            "SELECT revision, device, package, bench, ct_workload, variant, rt_workload,
                    joules, watts, control, counter_interval
             FROM energy",
        )?;
        let list = |text: Option<String>| -> Vec<f64> {
            text.and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default()
        };
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    RowKey {
                        revision: r.get(0)?,
                        device: r.get(1)?,
                        package: r.get(2)?,
                        bench: r.get(3)?,
                        ct_workload: r.get(4)?,
                        variant: r.get(5)?,
                        rt_workload: r.get(6)?,
                    },
                    Energy {
                        joules: list(r.get(7)?),
                        watts: list(r.get(8)?),
                        control: list(r.get(9)?),
                        counter_interval: r.get(10)?,
                    },
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Writes `energy` rows as they are (a merge copies a source's beside its results).
    pub(crate) fn put_energy(&self, energy: &[(RowKey, Energy)]) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        insert(&tx, energy)?;
        tx.commit()?;
        Ok(())
    }
}

/// Inserts (or replaces) each of `energy`.
fn insert(conn: &Connection, energy: &[(RowKey, Energy)]) -> Result<()> {
    for (k, e) in energy {
        conn.execute(
            "INSERT OR REPLACE INTO energy (revision, device, package, bench, ct_workload,
                variant, rt_workload, joules, watts, control, counter_interval)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                k.revision,
                k.device,
                k.package,
                k.bench,
                k.ct_workload,
                k.variant,
                k.rt_workload,
                serde_json::to_string(&e.joules)?,
                serde_json::to_string(&e.watts)?,
                (!e.control.is_empty())
                    .then(|| serde_json::to_string(&e.control))
                    .transpose()?,
                e.counter_interval,
            ],
        )?;
    }
    Ok(())
}
