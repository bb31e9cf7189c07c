//! `--decide`: a search that stops measuring a variant once it is slower than an earlier one
//! beyond the noise of both, on the spin fixture (work_k takes k times work_1's time).

use gputune_tests::{cargo_gputune, gputune, temp_dir, text};

#[test]
fn decide_screens_the_clearly_slower_and_measures_the_rest_in_full() {
    let bin = cargo_gputune();
    let dir = temp_dir("decide");
    let db = dir.join("store.db");
    let out = gputune(
        &bin,
        "gputune-fixture-spin",
        &db,
        &[
            "search",
            "-v",
            "-a",
            "Steps{io}=40000",
            "--",
            "--decide",
            "3",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "100",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--decide 3") && !stderr.contains("--race"),
        "{stderr}"
    );
    let order: Vec<String> = stderr
        .split("--variant ")
        .filter_map(|rest| rest.split_whitespace().next())
        .find(|list| list.contains("work_"))
        .expect("the batch command")
        .split(',')
        .map(|l| l.trim_start_matches("spin.").to_string())
        .collect();
    let work = |label: &str| -> u32 {
        label
            .strip_prefix("work_")
            .and_then(|w| w.parse().ok())
            .expect("a work label")
    };
    let store = rusqlite::Connection::open(&db).expect("the store opens");
    let rows: Vec<(String, String, Option<String>)> = store
        .prepare("SELECT variant, samples, message FROM results")
        .expect("query")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(rows.len(), 5, "{rows:?}");
    for (variant, samples, message) in &rows {
        let n = serde_json::from_str::<Vec<f64>>(samples)
            .expect("samples")
            .len();
        let position = order.iter().position(|l| l == variant);
        let slower_than_an_earlier =
            position.is_some_and(|p| order[..p].iter().any(|e| work(e) < work(variant)));
        if slower_than_an_earlier {
            // At least twice as slow as a variant measured before it: out at the screening.
            assert_eq!(n, 10, "{variant}: {message:?}");
            assert!(
                message.as_deref().is_some_and(|m| m.starts_with("raced:")),
                "{message:?}"
            );
        } else {
            assert_eq!(n, 100, "{variant} can still win and is measured in full");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
