//! Two searches into different stores, in one target directory, at the same time: each gets
//! exactly its own rows (they once shared one work area, read each other's event streams and
//! stored false crashes).

use std::process::Stdio;

use gputune_tests::{cargo_gputune, gputune_command, temp_dir, text};

#[test]
fn searches_into_different_stores_keep_to_their_own() {
    let bin = cargo_gputune();
    let dir = temp_dir("concurrent");
    // Different runtime workloads, so that a row in the wrong store would show.
    let steps = ["20000", "40000"];
    let children: Vec<_> = steps
        .iter()
        .map(|s| {
            gputune_command(&bin, "gputune-fixture-spin", &dir.join(format!("{s}.db")))
                .args([
                    "search",
                    "-a",
                    &format!("Steps{{io}}={s}"),
                    "--batch-size",
                    "1",
                ])
                .args([
                    "--",
                    "--stopping-criterion",
                    "sample-count",
                    "--target-samples",
                ])
                .arg("200")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("cargo-gputune starts")
        })
        .collect();
    for (child, s) in children.into_iter().zip(steps) {
        let out = child.wait_with_output().expect("finishes");
        assert!(out.status.success(), "search {s}: {}", text(&out));
        let conn = rusqlite::Connection::open(dir.join(format!("{s}.db"))).expect("store");
        let rows: Vec<(String, String, String)> = conn
            .prepare("SELECT variant, rt_workload, status FROM results ORDER BY variant")
            .expect("query")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("rows");
        let variants: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(
            variants,
            ["base", "work_1", "work_2", "work_4", "work_8"],
            "{s}: {rows:?}"
        );
        for (variant, rt, status) in &rows {
            assert_eq!(status, "ok", "{s}: {variant}");
            assert_eq!(rt, &format!("Steps{{io}}={s}"), "{s}: {variant}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
