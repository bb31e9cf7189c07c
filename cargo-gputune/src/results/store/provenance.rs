//! The store's `provenance` table (schema 5): where and how each bench pass measured, as the
//! bench sent it (the protocol's [`Provenance`], kept as its JSON so that the type is written
//! once). A search's passes mostly share one provenance, so each is kept once, under the
//! digest of its text, and every `results` row names the digest of the pass that measured
//! it. A merge or an import writes the provenance of the rows it writes, so a digest never
//! names a missing row.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use gputune_protocol::hash::Fnv64;
use gputune_protocol::Provenance;
use rusqlite::{params, Connection};

/// The table: one row per distinct provenance.
pub(super) const TABLE: &str = "
CREATE TABLE IF NOT EXISTS provenance (
    digest   TEXT PRIMARY KEY,
    document TEXT NOT NULL
);
";

/// The key of `document` (a provenance's JSON): 16 hex digits of its 64-bit FNV-1a.
pub fn digest(document: &str) -> String {
    let mut h = Fnv64::new();
    h.write(document.as_bytes());
    format!("{:016x}", h.finish())
}

/// Stores `p` (once) and returns its digest, which the row it belongs to keeps.
pub(super) fn put(conn: &Connection, p: &Provenance) -> Result<String> {
    let document = serde_json::to_string(p)?;
    let key = digest(&document);
    conn.execute(
        "INSERT OR IGNORE INTO provenance (digest, document) VALUES (?1, ?2)",
        params![key, document],
    )?;
    Ok(key)
}

/// Every stored provenance by digest. A document this build cannot read (a later protocol's,
/// or one edited by hand into something else) is left out: its rows read as of unknown
/// provenance rather than failing the whole store.
pub(super) fn all(conn: &Connection) -> Result<BTreeMap<String, Arc<Provenance>>> {
    let mut stmt = conn.prepare("SELECT digest, document FROM provenance")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    let mut out = BTreeMap::new();
    for row in rows {
        let (key, document) = row?;
        if let Ok(p) = serde_json::from_str::<Provenance>(&document) {
            out.insert(key, Arc::new(p));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provenance_is_kept_once_under_the_digest_of_its_text() {
        let conn = Connection::open_in_memory().expect("sqlite");
        conn.execute_batch(TABLE).expect("table");
        let p = Provenance {
            host: Some("node-1".into()),
            gputune: "0.1.0".into(),
            rustc: None,
            profile: Some("release".into()),
            opt_level: Some("3".into()),
            debug_assertions: Some(false),
            cuda: None,
        };
        let a = put(&conn, &p).expect("put");
        let b = put(&conn, &p).expect("put again");
        assert_eq!(a, b);
        assert_eq!(a.len(), 16);
        let other = Provenance {
            host: Some("node-2".into()),
            ..p.clone()
        };
        let c = put(&conn, &other).expect("put");
        assert_ne!(a, c);
        let read = all(&conn).expect("read");
        assert_eq!(read.len(), 2);
        assert_eq!(read[&a].as_ref(), &p);
        // A document that is not a provenance is passed over, not an error.
        conn.execute("INSERT INTO provenance VALUES ('bad', '{\"host\": 3}')", [])
            .expect("insert");
        assert_eq!(all(&conn).expect("read").len(), 2);
    }
}
