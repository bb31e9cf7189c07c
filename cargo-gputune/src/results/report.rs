//! `report`: per compile-time workload, the top variants and base (CUB's layout: variant,
//! score, mins, means, maxs; then the median time, the noise and a mark: `+` significantly
//! faster, `-` significantly slower, `~` within noise; then, for kernels that said, the
//! registers and local memory they compiled to), or coverage; as a table, JSON, CSV or
//! markdown, each explaining its columns. The JSON is what `check --baseline` reads.

use gputune_protocol::Status;
use serde_json::{json, Value};

use crate::results::present;
use crate::results::store::{Measurement, Store};
use crate::results::{Group, Ranked};

pub mod energy;
pub mod provenance;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns.
    Table,
    /// JSON (what `check --baseline` reads).
    Json,
    /// CSV.
    Csv,
    /// A markdown table.
    Markdown,
}

/// Version of the report JSON.
pub const REPORT_VERSION: u32 = 1;

/// What a group lists: its `top` best variants, then base (when it measured), and how many
/// variants were left out.
fn listed(g: &Group, top: usize) -> (Vec<Ranked>, usize) {
    let (base, variants): (Vec<Ranked>, Vec<Ranked>) =
        g.ranked().into_iter().partition(|r| r.variant == "base");
    let hidden = variants.len().saturating_sub(top);
    (variants.into_iter().take(top).chain(base).collect(), hidden)
}

/// A group with what it lists and how many variants it left out ([`listed`]).
type Listing<'a> = (&'a Group, Vec<Ranked>, usize);

/// Every group's [`listed`], ranked once for both the columns and the rows.
fn listings(groups: &[Group], top: usize) -> Vec<Listing<'_>> {
    groups
        .iter()
        .map(|g| {
            let (listed, hidden) = listed(g, top);
            (g, listed, hidden)
        })
        .collect()
}

/// The report JSON of `groups`, `top` variants each (base always included).
pub fn to_json(groups: &[Group], top: usize) -> Value {
    let gs: Vec<Value> = groups
        .iter()
        .map(|g| {
            let (listed, _) = listed(g, top);
            let energies = energy::Energies::of(g);
            json!({
                "package": g.package,
                "bench": g.bench,
                "function": g.function,
                "device": g.device,
                "device_name": crate::results::present::device_name(g),
                "arch": g.arch,
                "revision": g.revision,
                "ct_workload": g.ct_workload,
                "provenance": provenance::json(g),
                "variants": listed.iter().map(|r| json!({
                    "variant": r.variant,
                    "status": r.status,
                    "message": r.message,
                    "score": r.score.as_ref().map(|s| s.score),
                    "min": r.score.as_ref().map(|s| s.min),
                    "mean": r.score.as_ref().map(|s| s.mean),
                    "max": r.score.as_ref().map(|s| s.max),
                    "significant": r.score.as_ref().map(|s| s.significant),
                    "verdict": r.score.as_ref().filter(|_| r.variant != "base").map(|s| s.verdict().key()),
                    "time": r.timing.map(|t| t.time),
                    "noise": r.timing.and_then(|t| t.noise),
                    "kernels": r.kernels,
                    "energy": energies.json(&r.variant),
                    "workloads": g.variants.get(&r.variant).map(|ms| ms.iter().map(|m| {
                        let mut w = json!({
                            "rt_workload": m.rt_workload,
                            "status": m.status,
                            "center": m.center,
                            "noise": m.noise,
                            "samples": m.samples.len(),
                            "stop": m.stop.map(|s| s.as_str()),
                        });
                        crate::results::check::verdict::export_workload(g, m, &mut w);
                        w
                    }).collect::<Vec<_>>()),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "version": REPORT_VERSION, "groups": gs })
}

/// Column names of the table and markdown; [`Columns`] adds the kernels' after them.
const HEADER: [&str; 9] = [
    "variant", "score", "mins", "means", "maxs", "time", "noise", "samples", "sig",
];

/// What the columns and marks mean, one sentence a line.
const LEGEND: [&str; 5] = [
    "score: weighted mean of the speedups over base (base time / variant time) on the runtime workloads; > 1 is faster",
    "mins, means, maxs: smallest, mean and largest unweighted speedup over the runtime workloads",
    "time: median time (median over the runtime workloads when several); noise: relative stdev of the samples",
    "samples: cold samples over the runtime workloads, and why measuring stopped: criterion (in full), screened (the first pass only: it could not win), raced (clearly behind a faster one), tied (within --tie-margin of the leader, resolved), timeout, remeasured (measured again by check --remeasure)",
    "sig: + significantly faster than base, - significantly slower, ~ within noise (Mann-Whitney U, p < 0.05, and a difference beyond the noise and 0.5 %)",
];

/// What the `regs` column means.
const REGS: &str = "regs: registers per thread of each kernel the variant launched, in launch order (40/32: two kernels), as compiled for this device; --format json lists each kernel's name, shared memory and compiler options";

/// What the `lmem` column means.
const LMEM: &str = "lmem: local memory per thread of each kernel, bytes: register spills and local arrays (0: none)";

/// The columns a table or markdown report shows: [`HEADER`], then what the listed variants'
/// kernels compiled to, when any of them said (a CUDA bench of protocol 7 or later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Columns {
    /// `regs`: some listed variant reported its kernels.
    regs: bool,
    /// `lmem`: some listed variant's kernels use local memory (spills, local arrays).
    lmem: bool,
}

impl Columns {
    /// The columns of `listings`, the same for every group so that one legend fits them all.
    fn of(listings: &[Listing<'_>]) -> Columns {
        let kernels = || {
            listings
                .iter()
                .flat_map(|(_, l, _)| l)
                .flat_map(|r| &r.kernels)
        };
        Columns {
            regs: kernels().next().is_some(),
            lmem: kernels().any(|k| k.local_bytes > 0),
        }
    }

    /// The header row.
    fn header(self) -> Vec<&'static str> {
        let mut h = HEADER.to_vec();
        h.extend(self.regs.then_some("regs"));
        h.extend(self.lmem.then_some("lmem"));
        h
    }

    /// The legend: one sentence a column.
    fn legend(self) -> Vec<&'static str> {
        let mut l = LEGEND.to_vec();
        l.extend(self.regs.then_some(REGS));
        l.extend(self.lmem.then_some(LMEM));
        l
    }

    /// A row's cells: `cells`, then those of the kernels.
    fn row(self, cells: [String; 9], r: &Ranked) -> Vec<String> {
        let mut row = cells.to_vec();
        row.extend(self.regs.then(|| present::registers(&r.kernels)));
        row.extend(self.lmem.then(|| present::local_memory(&r.kernels)));
        row
    }
}

/// A variant's cold samples over its rows, and why they stopped (each reason once).
fn sampled(rows: &[Measurement]) -> String {
    let n: usize = rows.iter().map(|m| m.samples.len()).sum();
    if n == 0 {
        return String::new();
    }
    let mut why: Vec<&str> = Vec::new();
    for s in rows.iter().filter_map(|m| m.stop) {
        if !why.contains(&s.as_str()) {
            why.push(s.as_str());
        }
    }
    format!("{n} {}", why.join("/")).trim_end().to_string()
}

/// One row's cells as the table and markdown show them.
fn cells(g: &Group, r: &Ranked) -> [String; 9] {
    let samples = g
        .variants
        .get(&r.variant)
        .map(|rows| sampled(rows))
        .unwrap_or_default();
    let time = r.timing.map(|t| present::time(t.time)).unwrap_or_default();
    let noise = r
        .timing
        .and_then(|t| t.noise)
        .map(present::noise)
        .unwrap_or_default();
    match &r.score {
        // Base against itself: 1, and nothing to compare.
        Some(_) if r.variant == "base" => [
            r.variant.clone(),
            "1.0000".into(),
            String::new(),
            String::new(),
            String::new(),
            time,
            noise,
            samples,
            String::new(),
        ],
        Some(s) => [
            r.variant.clone(),
            format!("{:.4}", s.score),
            format!("{:.4}", s.min),
            format!("{:.4}", s.mean),
            format!("{:.4}", s.max),
            time,
            noise,
            samples,
            s.verdict().mark().into(),
        ],
        None => [
            r.variant.clone(),
            if r.status == Status::Ok {
                "unscored".into()
            } else {
                r.status.to_string()
            },
            String::new(),
            String::new(),
            String::new(),
            time,
            noise,
            samples,
            String::new(),
        ],
    }
}

/// What the table says under its rows when variants are missing from it.
fn note(g: &Group, hidden: usize, top: usize) -> Option<String> {
    let measured = g.variants.keys().filter(|v| *v != "base").count();
    if measured == 0 {
        Some("(no variants measured yet)".into())
    } else if hidden > 0 {
        Some(format!(
            "({} not shown: --top {top}; --top {measured} shows all)",
            present::count(hidden, "more variant")
        ))
    } else {
        None
    }
}

fn csv(groups: &[Group], top: usize) -> String {
    let mut s = String::from(
        "package,bench,function,ct_workload,arch,variant,score,mins,means,maxs,significant,time_s,noise,verdict,regs,lmem,energy_j,power_w,edp_js,pareto\n",
    );
    let num =
        |v: Option<f64>, digits: usize| v.map(|v| format!("{v:.digits$}")).unwrap_or_default();
    for g in groups {
        let energies = energy::Energies::of(g);
        for r in listed(g, top).0 {
            let sc = r.score.as_ref();
            s.push_str(&format!(
                "{},{},{},\"{}\",{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                g.package,
                g.bench,
                g.function,
                g.ct_workload,
                g.arch,
                r.variant,
                match sc {
                    Some(sc) => format!("{:.4}", sc.score),
                    None => r.status.to_string(),
                },
                num(sc.map(|s| s.min), 4),
                num(sc.map(|s| s.mean), 4),
                num(sc.map(|s| s.max), 4),
                sc.is_some_and(|s| s.significant),
                r.timing
                    .map(|t| format!("{:.4e}", t.time))
                    .unwrap_or_default(),
                num(r.timing.and_then(|t| t.noise), 4),
                sc.filter(|_| r.variant != "base")
                    .map(|s| s.verdict().key())
                    .unwrap_or_default(),
                present::registers(&r.kernels),
                present::local_memory(&r.kernels),
                energies.csv(&r.variant),
            ));
        }
    }
    s
}

fn table(groups: &[Group], top: usize) -> String {
    let mut s = String::new();
    let listings = listings(groups, top);
    let columns = Columns::of(&listings);
    let header = columns.header();
    for (g, listed, hidden) in &listings {
        let rows: Vec<Vec<String>> = listed.iter().map(|r| columns.row(cells(g, r), r)).collect();
        s.push_str(&format!("{}\n", crate::results::present::title(g)));
        for line in provenance::lines(g) {
            s.push_str(&format!("  {line}\n"));
        }
        for line in crate::results::present::aligned(&header, &rows, |i| i == 0) {
            s.push_str(&format!("  {line}\n"));
        }
        if let Some(note) = note(g, *hidden, top) {
            s.push_str(&format!("  {note}\n"));
        }
        s.push('\n');
    }
    for l in columns.legend() {
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn markdown(groups: &[Group], top: usize) -> String {
    let mut s = String::new();
    let listings = listings(groups, top);
    let columns = Columns::of(&listings);
    let header = columns.header();
    // The variant to the left, the mark centred, the numbers to the right.
    let align: Vec<&str> = header
        .iter()
        .map(|h| match *h {
            "variant" => "---",
            "sig" => ":---:",
            _ => "---:",
        })
        .collect();
    for (g, listed, hidden) in &listings {
        s.push_str(&format!("### {}\n\n", crate::results::present::title(g)));
        for line in provenance::lines(g) {
            s.push_str(&format!("{line}\n\n"));
        }
        s.push_str(&format!(
            "| {} |\n|{}|\n",
            header.join(" | "),
            align.join("|")
        ));
        for r in listed {
            s.push_str(&format!(
                "| {} |\n",
                columns.row(cells(g, r), r).join(" | ")
            ));
        }
        if let Some(note) = note(g, *hidden, top) {
            s.push_str(&format!("\n{note}\n"));
        }
        s.push('\n');
    }
    for l in columns.legend() {
        s.push_str(&format!("- {l}\n"));
    }
    s
}

/// Every variant of every group as the table would list them with no `--top`: what
/// `report --html` shows, so that it reads as the terminal does.
pub struct FullTable<'a> {
    /// The column names, the variant's first.
    pub header: Vec<&'static str>,
    /// What the columns and marks mean, one sentence each.
    pub legend: Vec<&'static str>,
    /// Each group's variants.
    pub groups: Vec<FullGroup<'a>>,
}

/// One group of a [`FullTable`].
pub struct FullGroup<'a> {
    /// The group.
    pub group: &'a Group,
    /// Its variants, best first (base where its score puts it).
    pub ranked: Vec<Ranked>,
    /// Their cells, one per column of the table's header.
    pub rows: Vec<Vec<String>>,
}

/// The [`FullTable`] of `groups`.
pub fn full_table(groups: &[Group]) -> FullTable<'_> {
    let listings: Vec<Listing<'_>> = groups.iter().map(|g| (g, g.ranked(), 0)).collect();
    let columns = Columns::of(&listings);
    FullTable {
        header: columns.header(),
        legend: columns.legend(),
        groups: listings
            .into_iter()
            .map(|(g, ranked, _)| {
                let rows = ranked.iter().map(|r| columns.row(cells(g, r), r)).collect();
                FullGroup {
                    group: g,
                    ranked,
                    rows,
                }
            })
            .collect(),
    }
}

/// The `--top` report in `format`.
pub fn render(groups: &[Group], top: usize, format: Format) -> String {
    match format {
        Format::Json => {
            serde_json::to_string_pretty(&to_json(groups, top)).unwrap_or_default() + "\n"
        }
        Format::Csv => csv(groups, top),
        Format::Markdown => markdown(groups, top),
        Format::Table => table(groups, top),
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
            .filter(|(v, ms)| {
                *v != "base"
                    && crate::results::counted(ms)
                        .iter()
                        .all(|m| m.status == Status::Ok)
            })
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

#[cfg(test)]
mod tests {
    use gputune_protocol::Status;

    use super::*;
    use crate::results::store::Measurement;

    /// Thirty samples within ±1.5 % of `center` on one workload.
    fn m(variant: &str, center: Option<f64>) -> Measurement {
        let samples: Vec<f64> = center
            .map(|c| {
                (0..30)
                    .map(|k| c * (1.0 + 0.03 * (f64::from(k * 7 % 11) / 10.0 - 0.5)))
                    .collect()
            })
            .unwrap_or_default();
        Measurement {
            revision: "r1".into(),
            device: "AMD EPYC|cpu|sms=2|bus=null|ecc=null".into(),
            arch: "cpu".into(),
            package: "p".into(),
            bench: "b".into(),
            function: "f".into(),
            ct_workload: "T=f32".into(),
            variant: variant.into(),
            rt_workload: "N=1".into(),
            rt_weight: 1.0,
            status: if center.is_some() {
                Status::Ok
            } else {
                Status::LaunchFailed
            },
            message: None,
            center,
            noise: center.map(|_| 0.012),
            bandwidth: None,
            samples,
            build_seconds: None,
            run_seconds: None,
            stop: None,
            control: Vec::new(),
            kernels: Vec::new(),
            provenance: None,
            sm_clocks: Vec::new(),
        }
    }

    fn groups() -> Vec<Group> {
        crate::results::groups(
            vec![
                m("base", Some(1e-4)),
                m("fast", Some(5e-5)),
                m("same", Some(1e-4)),
                m("slow", Some(2e-4)),
                m("broken", None),
            ],
            false,
        )
    }

    fn row<'a>(text: &'a str, label: &str) -> &'a str {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{label} ")))
            .unwrap_or_else(|| panic!("no {label} row in\n{text}"))
    }

    #[test]
    fn the_table_shows_base_times_noise_and_marks_each_direction() {
        let text = render(&groups(), 5, Format::Table);
        assert!(
            text.starts_with("p / b.f [T=f32] on AMD EPYC (cpu, 2 cores)\n"),
            "{text}"
        );
        let header = text.lines().nth(1).expect("header");
        for col in HEADER {
            assert!(header.contains(col), "{header}");
        }
        let base = row(&text, "base");
        assert!(
            base.contains("1.0000")
                && base.contains("100.0 us")
                && base.contains("±1.2 %")
                && base.trim_end().ends_with("30"),
            "{text}"
        );
        let fast = row(&text, "fast");
        assert!(
            fast.contains("2.0000") && fast.contains("50.00 us"),
            "{text}"
        );
        assert!(fast.trim_end().ends_with('+'), "{text}");
        assert!(row(&text, "slow").trim_end().ends_with('-'), "{text}");
        assert!(row(&text, "same").trim_end().ends_with('~'), "{text}");
        assert!(row(&text, "broken").contains("launch_failed"), "{text}");
        // Base comes after the variants, and the legend explains every column and mark.
        assert!(text.find("  base ") > text.find("  broken "), "{text}");
        assert!(
            text.contains("score: weighted mean of the speedups"),
            "{text}"
        );
        assert!(
            text.contains("mins, means, maxs: smallest, mean and largest"),
            "{text}"
        );
        assert!(
            text.contains(
                "+ significantly faster than base, - significantly slower, ~ within noise"
            ),
            "{text}"
        );
    }

    #[test]
    fn top_zero_shows_base_and_says_what_it_left_out() {
        let text = render(&groups(), 0, Format::Table);
        assert!(row(&text, "base").contains("100.0 us"), "{text}");
        assert!(!text.contains("no variants measured"), "{text}");
        assert!(
            text.contains("(4 more variants not shown: --top 0; --top 4 shows all)"),
            "{text}"
        );
        let only_base = crate::results::groups(vec![m("base", Some(1e-4))], false);
        let text = render(&only_base, 5, Format::Table);
        assert!(text.contains("(no variants measured yet)"), "{text}");
        assert!(row(&text, "base").contains("100.0 us"), "{text}");
    }

    #[test]
    fn json_csv_and_markdown_carry_the_same_rows() {
        let doc = to_json(&groups(), 5);
        let g = &doc["groups"][0];
        assert_eq!(g["device"], "AMD EPYC|cpu|sms=2|bus=null|ecc=null");
        assert_eq!(g["device_name"], "AMD EPYC (cpu, 2 cores)");
        let variants = g["variants"].as_array().expect("variants");
        let by = |label: &str| {
            variants
                .iter()
                .find(|v| v["variant"] == label)
                .unwrap_or_else(|| panic!("{label} in {doc}"))
        };
        assert_eq!(by("fast")["verdict"], "faster");
        assert_eq!(by("slow")["verdict"], "slower");
        assert_eq!(by("same")["verdict"], "within_noise");
        assert_eq!(by("fast")["time"], 5e-5);
        assert_eq!(by("base")["noise"], 0.012);
        assert!(by("base")["verdict"].is_null());
        // What `check --baseline` reads is still there.
        assert_eq!(by("base")["workloads"][0]["center"], 1e-4);
        assert_eq!(variants.last().expect("a row")["variant"], "base");

        let csv = render(&groups(), 5, Format::Csv);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(
            lines[0].ends_with(
                ",significant,time_s,noise,verdict,regs,lmem,energy_j,power_w,edp_js,pareto"
            ),
            "{csv}"
        );
        assert!(
            lines[1].contains(",fast,2.0000,")
                && lines[1].ends_with(",true,5.0000e-5,0.0120,faster,,,,,,"),
            "{csv}"
        );
        assert!(
            lines.last().is_some_and(|l| l.contains(",base,1.0000,")),
            "{csv}"
        );

        let md = render(&groups(), 5, Format::Markdown);
        assert!(md.contains("| fast | 2.0000 |"), "{md}");
        assert!(md.contains("| base | 1.0000 |"), "{md}");
        assert!(
            md.contains("- sig: + significantly faster than base"),
            "{md}"
        );
    }

    fn kernel(registers: u32, local_bytes: u32) -> gputune_protocol::KernelRecord {
        gputune_protocol::KernelRecord {
            name: "scale".into(),
            registers,
            local_bytes,
            shared_bytes: 2048,
            options: vec!["--maxrregcount=40".into()],
        }
    }

    #[test]
    fn registers_show_per_variant_and_local_memory_only_where_used() {
        // A CPU bench's rows have no kernels: neither column, nor its legend.
        let last = |text: &str, n: usize| -> Vec<String> {
            let header: Vec<&str> = text
                .lines()
                .nth(1)
                .expect("header")
                .split_whitespace()
                .collect();
            header[header.len() - n..]
                .iter()
                .map(|c| c.to_string())
                .collect()
        };
        let text = render(&groups(), 5, Format::Table);
        assert_eq!(last(&text, 1), ["sig"], "{text}");
        assert!(!text.contains("regs") && !text.contains("lmem"), "{text}");

        let mut rows = vec![
            m("base", Some(1e-4)),
            m("fast", Some(5e-5)),
            m("broken", None),
        ];
        rows[0].kernels = vec![kernel(40, 0)];
        rows[1].kernels = vec![kernel(40, 0), kernel(32, 0)];
        let text = render(
            &crate::results::groups(rows.clone(), false),
            5,
            Format::Table,
        );
        assert_eq!(last(&text, 2), ["sig", "regs"], "{text}");
        assert!(row(&text, "fast").ends_with("+  40/32"), "{text}");
        assert!(row(&text, "base").ends_with("   40"), "{text}");
        assert!(row(&text, "broken").contains("launch_failed"), "{text}");
        assert!(
            text.contains("\nregs: registers per thread of each kernel"),
            "{text}"
        );
        assert!(!text.contains("lmem"), "no spills, no column: {text}");

        // One kernel spills: the local memory of every listed variant's kernels.
        rows[1].kernels[1].local_bytes = 16;
        let gs = crate::results::groups(rows, false);
        let text = render(&gs, 5, Format::Table);
        assert_eq!(last(&text, 3), ["sig", "regs", "lmem"], "{text}");
        assert!(row(&text, "fast").ends_with("+  40/32  0/16"), "{text}");
        assert!(row(&text, "base").ends_with("   40     0"), "{text}");
        assert!(text.contains("\nlmem: local memory per thread"), "{text}");

        let doc = to_json(&gs, 5);
        let variants = doc["groups"][0]["variants"].as_array().expect("variants");
        let by = |label: &str| {
            variants
                .iter()
                .find(|v| v["variant"] == label)
                .unwrap_or_else(|| panic!("{label} in {doc}"))
        };
        let fast = &by("fast")["kernels"];
        assert_eq!(fast[1]["registers"], 32, "{doc}");
        assert_eq!(fast[1]["local_bytes"], 16, "{doc}");
        assert_eq!(fast[1]["shared_bytes"], 2048, "{doc}");
        assert_eq!(fast[1]["options"][0], "--maxrregcount=40", "{doc}");
        assert_eq!(by("broken")["kernels"], json!([]), "{doc}");

        let csv = render(&gs, 5, Format::Csv);
        assert!(
            csv.lines()
                .any(|l| l.contains(",fast,") && l.ends_with(",faster,40/32,0/16,,,,")),
            "{csv}"
        );
        let md = render(&gs, 5, Format::Markdown);
        assert!(md.contains("| sig | regs | lmem |\n|---|---:|"), "{md}");
        assert!(md.contains("|:---:|---:|---:|\n"), "{md}");
        assert!(md.contains("| + | 40/32 | 0/16 |"), "{md}");
        assert!(md.contains("- lmem: local memory"), "{md}");
    }
}
