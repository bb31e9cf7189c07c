//! `report`: per compile-time workload, the top variants (CUB's layout: variant, score,
//! mins, means, maxs) with a significance mark, or coverage; as a table, JSON, CSV or
//! markdown. The JSON is what `check --baseline` reads.

use gputune_protocol::Status;
use serde_json::{json, Value};

use crate::cli::Format;
use crate::results::Group;
use crate::store::Store;

/// Version of the report JSON.
pub const REPORT_VERSION: u32 = 1;

/// The report JSON of `groups`, `top` variants each (base always included).
pub fn to_json(groups: &[Group], top: usize) -> Value {
    let gs: Vec<Value> = groups
        .iter()
        .map(|g| {
            let ranked = g.ranked();
            let listed: Vec<&crate::results::Ranked> = ranked
                .iter()
                .filter(|r| r.variant != "base")
                .take(top)
                .chain(ranked.iter().filter(|r| r.variant == "base"))
                .collect();
            json!({
                "package": g.package,
                "bench": g.bench,
                "function": g.function,
                "device": g.device,
                "arch": g.arch,
                "revision": g.revision,
                "ct_workload": g.ct_workload,
                "variants": listed.iter().map(|r| json!({
                    "variant": r.variant,
                    "status": r.status,
                    "message": r.message,
                    "score": r.score.as_ref().map(|s| s.score),
                    "min": r.score.as_ref().map(|s| s.min),
                    "mean": r.score.as_ref().map(|s| s.mean),
                    "max": r.score.as_ref().map(|s| s.max),
                    "significant": r.score.as_ref().map(|s| s.significant),
                    "workloads": g.variants.get(&r.variant).map(|ms| ms.iter().map(|m| json!({
                        "rt_workload": m.rt_workload,
                        "status": m.status,
                        "center": m.center,
                        "noise": m.noise,
                    })).collect::<Vec<_>>()),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "version": REPORT_VERSION, "groups": gs })
}

fn rows(groups: &[Group], top: usize) -> Vec<(String, Vec<[String; 6]>)> {
    groups
        .iter()
        .map(|g| {
            let title = format!(
                "{} / {}.{} [{}] on {}",
                g.package, g.bench, g.function, g.ct_workload, g.arch
            );
            let rows = g
                .ranked()
                .into_iter()
                .filter(|r| r.variant != "base")
                .take(top)
                .map(|r| match &r.score {
                    Some(s) => [
                        r.variant.clone(),
                        format!("{:.4}", s.score),
                        format!("{:.4}", s.min),
                        format!("{:.4}", s.mean),
                        format!("{:.4}", s.max),
                        if s.significant {
                            "*".into()
                        } else {
                            "~".into()
                        },
                    ],
                    None => [
                        r.variant.clone(),
                        r.status.to_string(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                    ],
                })
                .collect();
            (title, rows)
        })
        .collect()
}

const HEADER: [&str; 6] = ["variant", "score", "mins", "means", "maxs", "sig"];

/// The `--top` report in `format`.
pub fn render(groups: &[Group], top: usize, format: Format) -> String {
    match format {
        Format::Json => {
            serde_json::to_string_pretty(&to_json(groups, top)).unwrap_or_default() + "\n"
        }
        Format::Csv => {
            let mut s = String::from("package,bench,function,ct_workload,arch,variant,score,mins,means,maxs,significant\n");
            for g in groups {
                for r in rows(std::slice::from_ref(g), top).remove(0).1 {
                    s.push_str(&format!(
                        "{},{},{},\"{}\",{},{},{},{},{},{},{}\n",
                        g.package,
                        g.bench,
                        g.function,
                        g.ct_workload,
                        g.arch,
                        r[0],
                        r[1],
                        r[2],
                        r[3],
                        r[4],
                        r[5] == "*"
                    ));
                }
            }
            s
        }
        Format::Markdown => {
            let mut s = String::new();
            for (title, rows) in rows(groups, top) {
                s.push_str(&format!(
                    "### {title}\n\n| {} |\n|{}\n",
                    HEADER.join(" | "),
                    "---|".repeat(6)
                ));
                for r in rows {
                    s.push_str(&format!("| {} |\n", r.join(" | ")));
                }
                s.push('\n');
            }
            s.push_str("`*` significant against base; `~` within noise.\n");
            s
        }
        Format::Table => {
            let mut s = String::new();
            for (title, rows) in rows(groups, top) {
                s.push_str(&format!("{title}\n"));
                let mut width = HEADER.map(str::len);
                for r in &rows {
                    for (w, c) in width.iter_mut().zip(r) {
                        *w = (*w).max(c.len());
                    }
                }
                let line = |cells: Vec<&str>| {
                    cells
                        .iter()
                        .zip(width)
                        .enumerate()
                        .map(|(i, (c, w))| {
                            if i == 0 {
                                format!("{c:<w$}")
                            } else {
                                format!("{c:>w$}")
                            }
                        })
                        .collect::<Vec<_>>()
                        .join("  ")
                };
                s.push_str(&format!("  {}\n", line(HEADER.to_vec())));
                for r in &rows {
                    s.push_str(&format!(
                        "  {}\n",
                        line(r.iter().map(String::as_str).collect())
                    ));
                }
                if rows.is_empty() {
                    s.push_str("  (no variants measured)\n");
                }
                s.push('\n');
            }
            s.push_str("* significant against base (Mann-Whitney U, p < 0.05); ~ within noise\n");
            s
        }
    }
}

/// `--coverage`: measured (any status) / space size per compile-time workload.
pub fn coverage(groups: &[Group], store: &Store, format: Format) -> anyhow::Result<String> {
    let mut entries = Vec::new();
    for g in groups {
        let space = store
            .space(&g.package, &g.function)?
            .map(|(n, _)| n)
            .unwrap_or(0);
        let measured = g.variants.keys().filter(|v| *v != "base").count();
        let ok = g
            .variants
            .iter()
            .filter(|(v, ms)| *v != "base" && ms.iter().all(|m| m.status == Status::Ok))
            .count();
        entries.push((g, measured, ok, space));
    }
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(&json!(entries.iter().map(|(g, m, ok, n)| json!({
            "package": g.package, "bench": g.bench, "function": g.function, "ct_workload": g.ct_workload,
            "arch": g.arch, "measured": m, "ok": ok, "space_size": n,
        })).collect::<Vec<_>>()))
        .unwrap_or_default()
            + "\n",
        Format::Csv => {
            let mut s = String::from("package,bench,function,ct_workload,arch,measured,ok,space_size\n");
            for (g, m, ok, n) in &entries {
                s.push_str(&format!("{},{},{},\"{}\",{},{m},{ok},{n}\n", g.package, g.bench, g.function, g.ct_workload, g.arch));
            }
            s
        }
        Format::Markdown | Format::Table => {
            let md = format == Format::Markdown;
            let mut s = if md {
                String::from("| bench | workload | measured | ok | space | coverage |\n|---|---|---:|---:|---:|---:|\n")
            } else {
                String::new()
            };
            for (g, m, ok, n) in &entries {
                let pct = if *n > 0 { 100.0 * *m as f64 / *n as f64 } else { 0.0 };
                if md {
                    s.push_str(&format!("| {}.{} | {} | {m} | {ok} | {n} | {pct:.1} % |\n", g.bench, g.function, g.ct_workload));
                } else {
                    s.push_str(&format!("{}.{} [{}] on {}: {m} / {n} measured ({pct:.1} %), {ok} ok\n", g.bench, g.function, g.ct_workload, g.arch));
                }
            }
            s
        }
    })
}
