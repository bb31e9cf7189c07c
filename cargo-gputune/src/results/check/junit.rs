//! The gate's verdict as JUnit XML (`check --junit FILE`), the format CI systems (Jenkins,
//! GitLab, GitHub's test-report actions) read: one test case per compared workload, failed
//! when SLOW, or UNDECIDED without `--allow-undecided`, with the numbers in the failure; one
//! per applied variant under `--min-score`; one failed case when the baseline matched
//! nothing; under `--strict-provenance`, one failed case per group measured under another
//! provenance than the baseline.
//!
//! The document follows the Apache Ant JUnit schema, the strictest of those in use, so that
//! any reader accepts it: `<testsuites>` without attributes around one `<testsuite>` that
//! carries `package`, `id`, `name`, `timestamp` (UTC, no zone), `hostname`, the counts and
//! `time`, then `<properties>`, the test cases, `<system-out>` (the markdown summary) and
//! `<system-err>`.

use std::fmt::Write as _;

use gputune_protocol::units::format_duration;

use super::{markdown, verdict, Comparison, Outcome};

/// `classname` of the cases that compare with the baseline.
pub const BASELINE_CLASS: &str = "gputune.check.baseline";

/// `classname` of the cases of the score gate.
pub const MIN_SCORE_CLASS: &str = "gputune.check.min_score";

/// `classname` of the cases of `--strict-provenance`.
pub const PROVENANCE_CLASS: &str = "gputune.check.provenance";

/// One test case: its class, name, and the failure (`type`, `message`, text) if it failed.
struct Case {
    class: &'static str,
    name: String,
    failure: Option<(&'static str, String, String)>,
}

/// The message of a compared workload: its verdict and every number it was judged by.
fn numbers(c: &Comparison) -> String {
    let drift = c.base_drift.map_or(String::new(), |d| {
        format!(", base drift {:+.2} %", (d - 1.0) * 100.0)
    });
    let remeasured = c.remeasured.as_ref().map_or(String::new(), |r| {
        format!(
            "; measured again: {} samples with {} of base",
            r.samples, r.base_samples
        )
    });
    format!(
        "{}: {:+.2} % against the baseline (baseline {}, current {}{drift}; same within \
         ±{:.2} %, resolved to {}{remeasured})",
        c.verdict,
        c.change() * 100.0,
        format_duration(c.baseline),
        format_duration(c.current),
        c.band * 100.0,
        markdown::resolution(c.resolution),
    )
}

/// The test cases of `outcome`, in the order the markdown lists them.
fn cases(outcome: &Outcome) -> Vec<Case> {
    let mut cases = Vec::new();
    if let Some(b) = outcome.baseline.as_ref().filter(|b| b.rows.is_empty()) {
        let mut text = String::from("The baseline holds:\n");
        for name in &b.unmatched {
            let _ = writeln!(text, "  {name}");
        }
        text.push_str("The store holds:\n");
        for name in &b.found {
            let _ = writeln!(text, "  {name}");
        }
        cases.push(Case {
            class: BASELINE_CLASS,
            name: "baseline matched".into(),
            failure: Some((
                "NOTHING_COMPARED",
                "no workload of the baseline was found in the store, so nothing was compared"
                    .into(),
                text,
            )),
        });
    }
    for c in outcome.comparisons() {
        let message = numbers(c);
        let fails = c.verdict == verdict::SLOW
            || (c.verdict == verdict::UNDECIDED && !outcome.allow_undecided);
        cases.push(Case {
            class: BASELINE_CLASS,
            name: c.name.clone(),
            failure: fails.then(|| {
                (
                    c.verdict,
                    message.clone(),
                    format!("{message}\n{}\n", markdown::CHANGE),
                )
            }),
        });
    }
    if outcome.strict_provenance {
        for d in outcome.provenance_differences() {
            let message = format!(
                "measured under another provenance than the baseline: {}",
                d.describe()
            );
            cases.push(Case {
                class: PROVENANCE_CLASS,
                name: d.group.clone(),
                failure: Some(("PROVENANCE", message.clone(), message)),
            });
        }
    }
    if let Some(min) = outcome.min_score {
        for a in &outcome.applied {
            let failed = outcome.applied_passes(a) != Some(true);
            let message = format!(
                "{} scores {} against base; the minimum is {min}",
                a.variant,
                a.score.map_or("n/a".into(), |s| format!("{s:.4}"))
            );
            cases.push(Case {
                class: MIN_SCORE_CLASS,
                name: format!("{} {}", a.workload, a.variant),
                failure: failed.then(|| ("BELOW_MIN_SCORE", message.clone(), message)),
            });
        }
    }
    cases
}

/// The JUnit XML of `outcome`, stamped `timestamp` (`YYYY-MM-DDTHH:MM:SS`, UTC) on `hostname`.
pub fn render(outcome: &Outcome, timestamp: &str, hostname: &str) -> String {
    let cases = cases(outcome);
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    let _ = writeln!(
        xml,
        "  <testsuite package=\"gputune\" id=\"0\" name=\"gputune check\" timestamp=\"{}\" \
         hostname=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"0\">",
        attribute(timestamp),
        attribute(&token(hostname)),
        cases.len()
    );
    xml.push_str("    <properties>\n");
    let mut properties = vec![
        ("result", outcome.result().as_str().to_string()),
        ("threshold", outcome.threshold.to_string()),
        (
            "provenance_differs",
            outcome.provenance_differences().len().to_string(),
        ),
    ];
    properties.extend(outcome.min_score.map(|m| ("min_score", m.to_string())));
    for (name, value) in properties {
        let _ = writeln!(
            xml,
            "      <property name=\"{name}\" value=\"{}\"/>",
            attribute(&value)
        );
    }
    xml.push_str("    </properties>\n");
    for case in &cases {
        let open = format!(
            "    <testcase classname=\"{}\" name=\"{}\" time=\"0\"",
            case.class,
            attribute(&token(&case.name))
        );
        match &case.failure {
            None => {
                let _ = writeln!(xml, "{open}/>");
            }
            Some((kind, message, text)) => {
                let _ = writeln!(
                    xml,
                    "{open}>\n      <failure type=\"{kind}\" message=\"{}\">{}</failure>\n    </testcase>",
                    attribute(message),
                    content(text)
                );
            }
        }
    }
    let _ = writeln!(
        xml,
        "    <system-out>{}</system-out>\n    <system-err></system-err>\n  </testsuite>\n</testsuites>",
        content(&markdown::render(outcome))
    );
    xml
}

/// `text` as XML character data: markup escaped, and the characters XML 1.0 cannot hold
/// (control characters other than tab and line breaks, which a bench's message may carry)
/// dropped.
fn content(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` as an attribute value: as [`content`], with quotes and line breaks as references
/// (a literal line break in an attribute would be read back as a space).
fn attribute(text: &str) -> String {
    content(text)
        .replace('"', "&quot;")
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
        .replace('\t', "&#9;")
}

/// `text` as an `xs:token`, which names and classes are: single spaces, none at the ends.
fn token(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Now, in UTC, as the schema's timestamp wants it: `YYYY-MM-DDTHH:MM:SS`, no zone.
pub fn timestamp_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    timestamp(secs)
}

/// `secs` after the Unix epoch as `YYYY-MM-DDTHH:MM:SS` (UTC; Howard Hinnant's
/// civil-from-days, so that no date crate is needed for one line).
fn timestamp(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// This machine's name, for the suite's `hostname`; `localhost` when it cannot be read, as
/// the schema asks.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| token(&h))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{compared, comparison};
    use super::super::{Applied, BaselineComparison, Outcome};
    use super::*;

    /// A test case as read back: classname, name, and its failure's type and message.
    type Parsed = (String, String, Option<(String, String)>);

    /// The test cases of a document.
    fn parsed(xml: &str) -> Vec<Parsed> {
        let doc = roxmltree::Document::parse(xml).expect("well-formed XML");
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        assert_eq!(root.attributes().count(), 0, "the Ant schema allows none");
        let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
        assert_eq!(suites.len(), 1);
        let suite = suites[0];
        for required in [
            "package",
            "id",
            "name",
            "timestamp",
            "hostname",
            "tests",
            "failures",
            "errors",
            "time",
        ] {
            assert!(suite.attribute(required).is_some(), "no {required}");
        }
        let children: Vec<&str> = suite
            .children()
            .filter(|n| n.is_element())
            .map(|n| n.tag_name().name())
            .collect();
        assert_eq!(children.first(), Some(&"properties"));
        assert_eq!(
            &children[children.len() - 2..],
            ["system-out", "system-err"]
        );
        let cases: Vec<_> = suite
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .map(|c| {
                let failure = c.children().find(|n| n.has_tag_name("failure")).map(|f| {
                    (
                        f.attribute("type").unwrap_or_default().to_string(),
                        f.attribute("message").unwrap_or_default().to_string(),
                    )
                });
                (
                    c.attribute("classname").unwrap_or_default().to_string(),
                    c.attribute("name").unwrap_or_default().to_string(),
                    failure,
                )
            })
            .collect();
        let count = |k: &str| suite.attribute(k).and_then(|v| v.parse::<usize>().ok());
        assert_eq!(count("tests"), Some(cases.len()));
        assert_eq!(
            count("failures"),
            Some(cases.iter().filter(|c| c.2.is_some()).count())
        );
        cases
    }

    #[test]
    fn each_compared_workload_is_a_case_and_slow_ones_fail_with_their_numbers() {
        let outcome = compared(vec![
            comparison("b.f [*] x_1 N=1", 1.0, "SAME"),
            comparison("b.f [*] x_2 N=1", 1.5, "SLOW"),
            comparison("b.f [*] x_3 N=1", 0.5, "FAST"),
        ]);
        let xml = render(&outcome, "2026-11-26T12:00:00", "ci-runner");
        let cases = parsed(&xml);
        assert_eq!(cases.len(), 3);
        assert!(cases.iter().all(|c| c.0 == BASELINE_CLASS));
        assert_eq!(cases[0].1, "b.f [*] x_1 N=1");
        assert_eq!(cases[0].2, None);
        assert_eq!(cases[2].2, None, "faster passes");
        let (kind, message) = cases[1].2.clone().expect("SLOW fails");
        assert_eq!(kind, "SLOW");
        assert_eq!(
            message,
            "SLOW: +50.00 % against the baseline (baseline 1.000 s, current 1.500 s; same \
             within ±0.50 %, resolved to ±0.10 %)"
        );
    }

    #[test]
    fn an_undecided_workload_fails_unless_allowed_and_a_provenance_under_strict() {
        let mut undecided = comparison("b.f [*] x_1 N=1", 1.02, "UNDECIDED");
        undecided.resolution = None;
        let mut outcome = compared(vec![undecided]);
        let cases = parsed(&render(&outcome, "2026-11-26T12:00:00", "ci"));
        let (kind, message) = cases[0].2.clone().expect("UNDECIDED fails");
        assert_eq!(kind, "UNDECIDED");
        assert!(message.contains("resolved to unbounded"), "{message}");
        outcome.allow_undecided = true;
        assert_eq!(parsed(&render(&outcome, "t", "ci"))[0].2, None);
        let difference = crate::results::check::provenance::Difference {
            group: "p/b.f [*] on GPU".into(),
            changed: vec![crate::results::check::provenance::Changed {
                key: "driver",
                label: "driver",
                then: vec!["580.159.04".into()],
                now: vec!["575.57.08".into()],
            }],
        };
        if let Some(b) = outcome.baseline.as_mut() {
            b.provenance.differences.push(difference);
        }
        assert_eq!(
            parsed(&render(&outcome, "t", "ci")).len(),
            1,
            "said, not failed"
        );
        outcome.strict_provenance = true;
        let cases = parsed(&render(&outcome, "t", "ci"));
        assert_eq!(cases[1].0, PROVENANCE_CLASS);
        assert_eq!(
            cases[1].2.clone().map(|f| f.1),
            Some(
                "measured under another provenance than the baseline: driver 580.159.04 → \
                 575.57.08"
                    .to_string()
            )
        );
    }

    #[test]
    fn nothing_compared_and_low_scores_fail_and_odd_text_stays_well_formed() {
        let outcome = Outcome {
            baseline: Some(BaselineComparison {
                rows: Vec::new(),
                unmatched: vec!["p/b.f [*] on GPU <A> & \"B\"".into()],
                ..BaselineComparison::default()
            }),
            applied: vec![Applied {
                workload: "b.f [op=a<b]  on\tsm_90".into(),
                variant: "x_1".into(),
                score: Some(0.9),
            }],
            min_score: Some(1.0),
            threshold: 0.005,
            ..Outcome::default()
        };
        let xml = render(&outcome, "2026-11-26T12:00:00", "host\u{1}name");
        let cases = parsed(&xml);
        assert_eq!(cases.len(), 2);
        assert_eq!(
            cases[0].2.as_ref().map(|f| f.0.as_str()),
            Some("NOTHING_COMPARED")
        );
        assert_eq!(cases[1].0, MIN_SCORE_CLASS);
        assert_eq!(cases[1].1, "b.f [op=a<b] on sm_90 x_1", "a token");
        assert_eq!(
            cases[1].2.as_ref().map(|f| f.1.as_str()),
            Some("x_1 scores 0.9000 against base; the minimum is 1")
        );
        let doc = roxmltree::Document::parse(&xml).expect("parses");
        let out = doc
            .descendants()
            .find(|n| n.has_tag_name("system-out"))
            .and_then(|n| n.text())
            .expect("the summary");
        assert!(out.contains("GPU <A> & \"B\""), "{out}");
    }

    #[test]
    fn timestamps_are_utc_without_a_zone() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00");
        assert_eq!(timestamp(951_782_400 + 3_661), "2000-02-29T01:01:01");
        assert_eq!(timestamp(1_795_000_000), "2026-11-18T11:06:40");
        let now = timestamp_now();
        assert_eq!(now.len(), 19, "{now}");
    }
}
