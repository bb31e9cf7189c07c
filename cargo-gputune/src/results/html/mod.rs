//! `report --html FILE`: one self-contained page that people open instead of reading a
//! terminal. Per bench and workload, the ranked table (search, sort, filter by parameter
//! values), each variant's details (status, samples, stop reason, build and run time,
//! failure), the sample distributions, the score over two parameters and the search's
//! timeline.
//!
//! Self-contained means no network: the data ([`data`]), the style and the script are inline,
//! so the file can be mailed, archived as a CI artifact or opened offline. The numbers and
//! words of the table are the terminal report's own ([`crate::results::report::full_table`]).

pub mod data;
pub mod timeline;

use std::path::Path;

use anyhow::{Context, Result};

use crate::results::plot::Specs;
use crate::results::store::Dated;
use crate::results::Group;

/// The page around the data.
const TEMPLATE: &str = include_str!("page.html");
/// Its style.
const STYLE: &str = include_str!("report.css");
/// Its script.
const SCRIPT: &str = include_str!("report.js");

/// The page of `groups` from the store named `store`.
pub fn page(store: &str, groups: &[Group], specs: &Specs, dated: &[Dated]) -> Result<String> {
    let table = crate::results::report::full_table(groups);
    let data = data::page(store, &table, specs, dated);
    let json = serde_json::to_string(&data).context("cannot write the report's data")?;
    // In JSON a `<` can only be inside a string, where `\u003c` means the same; without any
    // `<`, nothing in the data can end the script element it sits in.
    let json = json.replace('<', "\\u003c");
    let title = match groups {
        [one] => crate::results::present::title(one),
        _ => format!("{} groups from {store}", groups.len()),
    };
    Ok(TEMPLATE
        .replace("{{TITLE}}", &escape(&format!("gputune report: {title}")))
        .replace("/*{{STYLE}}*/", STYLE)
        .replace("/*{{SCRIPT}}*/", SCRIPT)
        .replace("{{DATA}}", &json))
}

/// Writes the page to `path`, creating its directory.
pub fn write(
    path: &Path,
    store: &str,
    groups: &[Group],
    specs: &Specs,
    dated: &[Dated],
) -> Result<()> {
    let page = page(store, groups, specs, dated)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))
}

/// `text` as HTML character data.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::store::Measurement;

    fn dated(m: Measurement, created: &str) -> Dated {
        Dated {
            measurement: m,
            created: created.into(),
        }
    }

    fn rows() -> Vec<Dated> {
        let mut base = crate::results::tests::m("base", "N=1", 2e-4, 0.01);
        base.samples = vec![2e-4, 2.02e-4, 1.98e-4];
        let mut fast = crate::results::tests::m("a_1.b_x", "N=1", 1e-4, 0.01);
        fast.samples = vec![1e-4, 1.01e-4, 0.99e-4];
        fast.control = base.samples.clone();
        fast.build_seconds = Some(1.5);
        let mut broken = crate::results::tests::m("a_2.b_y", "N=1", 1e-4, 0.0);
        broken.status = gputune_protocol::Status::VerifyFailed;
        broken.message = Some("wrong </script> answer".into());
        broken.center = None;
        vec![
            dated(base, "2026-11-23T16:00:00.000Z"),
            dated(fast, "2026-11-23T16:00:01.500Z"),
            dated(broken, "2026-11-23T16:00:02.000Z"),
        ]
    }

    fn specs() -> Specs {
        let spec = gputune_grammar::parse_str("a = [1, 2], b = [x, y], base(a = 1, b = y)")
            .expect("parses");
        Specs::from([(("p".to_string(), "f".to_string()), spec)])
    }

    /// The data embedded in `page`.
    fn data(page: &str) -> serde_json::Value {
        let start = page
            .find(r#"<script type="application/json" id="data">"#)
            .expect("the data element");
        let rest = &page[start..];
        let open = rest.find('>').expect("its tag") + 1;
        let close = rest.find("</script>").expect("its end");
        serde_json::from_str(&rest[open..close]).expect("the data is JSON")
    }

    #[test]
    fn the_page_holds_the_table_as_the_terminal_writes_it() {
        let dated = rows();
        let ms: Vec<Measurement> = dated.iter().map(|d| d.measurement.clone()).collect();
        let groups = crate::results::groups(ms, false);
        let page = page("store.db", &groups, &specs(), &dated).expect("a page");
        // Self-contained: nothing fetched.
        for external in ["src=", "href=\"http", "@import", "url("] {
            assert!(!page.contains(external), "{external}");
        }
        // The message's `</script>` cannot end the data early.
        assert_eq!(page.matches("</script>").count(), 2, "data and script");
        let doc = data(&page);
        let g = &doc["groups"][0];
        let terminal =
            crate::results::report::render(&groups, 5, crate::results::report::Format::Table);
        let v = &g["variants"];
        // Best first; a label the parameters spell is left out, base's kept.
        assert_eq!(v["label"][0], serde_json::Value::Null);
        assert_eq!(v["params"][0], serde_json::json!([0, 0]));
        assert_eq!(v["label"][1], "base");
        assert_eq!(v["params"][1], serde_json::json!([0, 1]), "base's values");
        assert_eq!(v["status"][2], "verify_failed");
        assert_eq!(v["message"][2], "wrong </script> answer");
        // Every cell is the terminal's.
        for (row, label) in [(0, "a_1.b_x"), (1, "base"), (2, "a_2.b_y")] {
            let line = terminal
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{label} ")))
                .expect("a terminal row");
            let cells = v["cells"][row].as_array().expect("cells");
            for cell in cells.iter().filter_map(|c| c.as_str()) {
                assert!(line.contains(cell), "{cell} not in {line}");
            }
        }
        assert_eq!(doc["header"][0], "variant");
        assert_eq!(g["unit"], "us");
        // Samples in the unit, the control stored once and referred to.
        // [rt, stop, samples, control]
        assert_eq!(
            v["measured"][0][0],
            serde_json::json!([0, null, [100.0, 101.0, 99.0], 0])
        );
        assert_eq!(g["controls"][0], serde_json::json!([200.0, 202.0, 198.0]));
        assert_eq!(v["at"][0], 1.5);
        assert_eq!(v["build"][0], 1.5);
        assert_eq!(g["timeline"]["span"], 2.0);
    }
}
