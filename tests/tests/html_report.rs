//! `report --html` in a real browser (headless Chromium, which `.ci/run` installs): on the
//! README quick start's store and on the recorded 16,020-point store of issue 17, the page
//! opens without console errors, its table holds every variant, sorting and filtering change
//! the rows, and a screenshot is taken. Where Chromium cannot run, each test says it was
//! skipped. How fast the page opens is measured by `scripts/local/report-png.py` (BENCHMARKS.md),
//! not asserted here; the time is printed.

use std::path::Path;
use std::sync::Mutex;

use gputune_tests::browser::Browser;
use gputune_tests::{cargo_gputune, gputune, root, skipped, temp_dir, text};
use serde_json::Value;

/// One browser and one build at a time: the machine running CI has two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The labels in the table, top to bottom.
const LABELS: &str =
    "[...document.querySelectorAll('#rows .row .label')].map(td => td.textContent)";

/// Waits until `expression` is true in the page (the search box's input is debounced).
fn until(b: &mut Browser, expression: &str) {
    for _ in 0..100 {
        if b.eval(expression).expect("evaluates") == Value::Bool(true) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("never true: {expression}");
}

fn labels(b: &mut Browser) -> Vec<String> {
    serde_json::from_value(b.eval(LABELS).expect("labels")).expect("strings")
}

/// Opens `page` and checks what every report page must do; `variants` is how many the store
/// holds (base included) and `param` a parameter filter to try (its name and a value).
fn check_page(page: &Path, variants: usize, param: (&str, &str), shot: &Path) {
    let mut b = match Browser::launch(1400, 1800) {
        Ok(b) => b,
        Err(why) => return skipped(&format!("Chromium cannot run here: {why}")),
    };
    let started = std::time::Instant::now();
    b.open(page).expect("the page opens");
    // The page marks itself rendered once the frame after its script's drawing is painted.
    until(
        &mut b,
        "performance.getEntriesByName('gputune-rendered').length > 0",
    );
    let rendered = b
        .eval("performance.getEntriesByName('gputune-rendered')[0]?.startTime ?? null")
        .expect("evaluates");
    eprintln!(
        "{}: opened in {:.2} s ({:.0} ms from navigation to the rendered mark)",
        page.display(),
        started.elapsed().as_secs_f64(),
        rendered.as_f64().unwrap_or(f64::NAN)
    );
    assert!(rendered.is_number(), "the page's script did not finish");
    assert_eq!(b.errors(), Vec::<String>::new(), "console errors");

    // Every variant is a row, in the report's rank order; base among them.
    let all = labels(&mut b);
    assert_eq!(all.len(), variants);
    assert!(all.iter().any(|l| l == "base"));
    let shown = b
        .eval("document.getElementById('shown').textContent")
        .expect("count");
    assert_eq!(
        shown,
        format!("{variants} of {variants} variants shown").as_str()
    );

    // Sorting by time (a mouse click on its header), fastest first, then slowest first.
    b.click("#head [data-col=time]").expect("click");
    // With one runtime workload the report's rank is already fastest first (score = base's
    // time / the variant's), so the first click may leave the order as it was: the times are
    // checked to be in order, and the second click must reverse them.
    let by_time = labels(&mut b);
    let times: Vec<f64> = serde_json::from_value::<Vec<String>>(
        b.eval(
            "[...document.querySelectorAll('#rows .row')].map(tr => tr.children[6].textContent)",
        )
        .expect("times"),
    )
    .expect("strings")
    .iter()
    .filter_map(|t| {
        let (v, unit) = t.split_once(' ')?;
        let scale = match unit {
            "ns" => 1e-9,
            "us" => 1e-6,
            "ms" => 1e-3,
            _ => 1.0,
        };
        Some(v.parse::<f64>().ok()? * scale)
    })
    .collect();
    assert!(
        times.len() > 1 && times.windows(2).all(|w| w[0] <= w[1]),
        "{times:?}"
    );
    b.click("#head [data-col=time]").expect("click");
    let slowest_first = labels(&mut b);
    assert_eq!(slowest_first.len(), variants);
    assert_ne!(slowest_first[0], by_time[0]);

    // Filtering by typing into the search box: only labels that hold the text.
    let (name, value) = param;
    let term = format!("{name}_{value}");
    b.click("#search").expect("click");
    b.type_text(&term).expect("types");
    until(
        &mut b,
        &format!("document.querySelectorAll('#rows .row').length < {variants}"),
    );
    let found = labels(&mut b);
    assert!(
        !found.is_empty() && found.iter().all(|l| l.contains(&term)),
        "{found:?}"
    );
    let expected = all.iter().filter(|l| l.contains(&term)).count();
    assert_eq!(found.len(), expected);

    // Clearing, then filtering by the parameter's value: the same variants.
    b.click("#clear").expect("click");
    until(
        &mut b,
        &format!("document.querySelectorAll('#rows .row').length === {variants}"),
    );
    let set = format!(
        "(() => {{ const s = [...document.querySelectorAll('#param-filters label')]
             .find(l => l.firstChild.textContent.trim() === {name:?}).querySelector('select');
           s.value = [...s.options].find(o => o.textContent === {value:?}).value;
           s.dispatchEvent(new Event('change', {{ bubbles: true }})); return true; }})()"
    );
    assert_eq!(b.eval(&set).expect("selects"), Value::Bool(true));
    // The variants whose label says so, and base where its own value is that one.
    let mut by_param: Vec<String> = labels(&mut b).into_iter().filter(|l| l != "base").collect();
    let mut by_text = found.clone();
    by_param.sort();
    by_text.sort();
    assert_eq!(by_param, by_text);

    // A row's details, and the pictures.
    b.click("#rows .row").expect("click");
    let details = b
        .eval("document.getElementById('details').hidden === false && document.getElementById('details-facts').textContent")
        .expect("details");
    assert!(
        details.as_str().is_some_and(|d| d.contains("status")),
        "{details}"
    );
    let plots = b
        .eval("document.querySelectorAll('#distributions svg, #heat svg, #timeline svg').length")
        .expect("plots");
    assert!(plots.as_u64().is_some_and(|n| n >= 3), "{plots}");
    assert_eq!(b.errors(), Vec::<String>::new(), "console errors");

    let png = b.screenshot().expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    std::fs::write(shot, png).expect("write the screenshot");
    eprintln!("screenshot: {}", shot.display());
}

#[test]
fn the_quick_start_report_works_in_a_browser() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bin = cargo_gputune();
    let dir = temp_dir("html-quick-start");
    let db = dir.join("store.db");
    // README's quick start (in the dev profile, as the other tests build).
    let out = gputune(
        &bin,
        "gputune-example-reduce-cpu",
        &db,
        &[
            "search",
            "-a",
            "T{ct}=f32",
            "-a",
            "Elements{io}[pow2]=20",
            "--strategy",
            "random",
            "--max-evals",
            "16",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let page = dir.join("report.html");
    let out = gputune(
        &bin,
        "gputune-example-reduce-cpu",
        &db,
        &["report", "--html", page.to_str().expect("utf-8")],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Wrote the HTML report of 17 variants"),
        "{}",
        text(&out)
    );
    check_page(&page, 17, ("lanes", "8"), &dir.join("report.png"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `report --html` of the store `db`, written to `dir/report.html` from `dir` (outside the
/// workspace: `report --db` needs none).
fn html_of(db: &Path, dir: &Path) -> std::path::PathBuf {
    let page = dir.join("report.html");
    let out = std::process::Command::new(cargo_gputune())
        .args(["gputune", "report", "--top", "0", "--db"])
        .arg(db)
        .arg("--html")
        .arg(&page)
        .current_dir(dir)
        .output()
        .expect("cargo-gputune runs");
    assert!(out.status.success(), "{}", text(&out));
    page
}

#[test]
fn the_recorded_16020_point_store_makes_a_small_page_that_works() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let record = root().join("benchmarks/2026-11-23-h200-large-space/record.db.xz");
    let dir = temp_dir("html-large");
    let db = dir.join("record.db");
    let unpacked = std::process::Command::new("xz")
        .arg("-dc")
        .arg(&record)
        .output();
    let Ok(unpacked) = unpacked.map_err(|e| skipped(&format!("xz cannot run: {e}"))) else {
        return;
    };
    assert!(unpacked.status.success(), "xz -dc {}", record.display());
    std::fs::write(&db, &unpacked.stdout).expect("write the store");
    let page = html_of(&db, &dir);
    let size = std::fs::metadata(&page).expect("the page").len();
    assert!(size < 5_000_000, "the page is {size} bytes");
    check_page(&page, 16_021, ("unroll", "4"), &dir.join("report.png"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The store of candle's three kernels (BENCHMARKS.md, 2026-11-28): the page's function filter
/// lists the three functions, and choosing one offers only its groups and shows its first.
#[test]
fn the_function_filter_offers_one_function_s_groups() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let db = root().join("benchmarks/2026-11-28-h200-candle-ops/search-1.db");
    let dir = temp_dir("html-functions");
    let page = html_of(&db, &dir);
    let mut b = match Browser::launch(1400, 1800) {
        Ok(b) => b,
        Err(why) => return skipped(&format!("Chromium cannot run here: {why}")),
    };
    b.open(&page).expect("the page opens");
    until(
        &mut b,
        "performance.getEntriesByName('gputune-rendered').length > 0",
    );
    let options = |b: &mut Browser, id: &str| -> Vec<String> {
        let js = format!("[...document.getElementById('{id}').options].map(o => o.textContent)");
        serde_json::from_value(b.eval(&js).expect("options")).expect("strings")
    };
    assert_eq!(
        options(&mut b, "function"),
        ["all", "layernorm", "rmsnorm", "softmax"]
    );
    assert_eq!(options(&mut b, "group").len(), 9, "every group at first");
    let choose = "const s = document.getElementById('function'); s.value = 'softmax'; \
                  s.dispatchEvent(new Event('change')); true";
    assert_eq!(b.eval(choose).expect("chooses"), Value::Bool(true));
    let groups = options(&mut b, "group");
    assert_eq!(groups.len(), 3, "{groups:?}");
    assert!(
        groups.iter().all(|g| g.contains("softmax.softmax")),
        "{groups:?}"
    );
    until(
        &mut b,
        "document.getElementById('title').textContent.includes('softmax')",
    );
    assert_eq!(b.errors(), Vec::<String>::new(), "console errors");
    let _ = std::fs::remove_dir_all(&dir);
}
