//! BENCHMARKS.md and the records behind it (issue 48), checked as CI runs the tests:
//!
//! - every relative link of BENCHMARKS.md and of every markdown file under `benchmarks/` reaches a
//!   file or folder that exists, and a `#anchor` reaches a heading of its file (GitHub's anchors);
//! - every markdown file under `benchmarks/` is reached from BENCHMARKS.md by such links;
//! - BENCHMARKS.md has at most 150 lines;
//! - every number in a section of BENCHMARKS.md is in a markdown file that section links to, so a
//!   figure on the first page can be traced to its record (and was not made up there).
//!
//! The checker reads its files through [`Files`], so the tests at the end run the same checks on
//! small trees held in memory and show that each kind of fault is reported. Paths are relative to
//! the workspace root, found as `docs.rs` finds `docs/` (the crate's manifest folder's parent).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// The first page.
const PAGE: &str = "BENCHMARKS.md";
/// The folder of the records and the raw data.
const RECORDS: &str = "benchmarks";
/// The first page's length, in lines.
const MAX_LINES: usize = 150;

/// Where the checked files come from: the workspace on disk, or a tree in memory.
trait Files {
    /// The text of a file, if it is a file that can be read.
    fn text(&self, path: &str) -> Option<String>;
    /// Whether a file or a folder is there.
    fn exists(&self, path: &str) -> bool;
    /// Every markdown file under `dir`, at any depth, sorted.
    fn markdown_under(&self, dir: &str) -> Vec<String>;
}

struct Disk(PathBuf);

impl Files for Disk {
    fn text(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.0.join(path)).ok()
    }

    fn exists(&self, path: &str) -> bool {
        self.0.join(path).exists()
    }

    fn markdown_under(&self, dir: &str) -> Vec<String> {
        fn walk(root: &Path, rel: &str, out: &mut Vec<String>) {
            let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
                return;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = format!("{rel}/{name}");
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    walk(root, &path, out);
                } else if name.ends_with(".md") {
                    out.push(path);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.0, dir, &mut out);
        out.sort();
        out
    }
}

/// Files by path; a folder is there when a file is under it.
struct Memory(BTreeMap<String, String>);

impl Files for Memory {
    fn text(&self, path: &str) -> Option<String> {
        self.0.get(path).cloned()
    }

    fn exists(&self, path: &str) -> bool {
        let folder = format!("{path}/");
        path.is_empty() || self.0.keys().any(|k| k == path || k.starts_with(&folder))
    }

    fn markdown_under(&self, dir: &str) -> Vec<String> {
        let folder = format!("{dir}/");
        self.0
            .keys()
            .filter(|k| k.starts_with(&folder) && k.ends_with(".md"))
            .cloned()
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Markdown, as far as these files need it.

/// The lines outside fenced code blocks, with their numbers (from 1).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
        } else if !fence {
            out.push((i + 1, line));
        }
    }
    out
}

/// A line without its inline code spans (a link inside backticks is no link).
fn without_code(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        match after.find(&"`".repeat(ticks)) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of a line's inline links and images, `[text](target "title")`, and of a reference
/// definition, `[label]: target`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code(line);
    let mut out = Vec::new();
    let trimmed = line.trim_start();
    if trimmed.starts_with('[') {
        if let Some(end) = trimmed.find("]:") {
            if let Some(target) = trimmed[end + 2..].split_whitespace().next() {
                out.push(target.trim_matches(['<', '>']).to_string());
            }
        }
    }
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = i;
                    break;
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        let inner = after[..end].trim();
        let target = match inner.strip_prefix('<') {
            Some(angled) => angled.split('>').next().unwrap_or(""),
            None => inner.split_whitespace().next().unwrap_or(""),
        };
        out.push(target.to_string());
        rest = &after[end.min(after.len())..];
    }
    out
}

/// `%20` and the like, decoded.
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// GitHub's anchor for a heading: lower case, every character but letters, digits, `_`, `-` and
/// spaces dropped, spaces as `-` (its `[^\p{Word}\- ]`; only ASCII digits are kept here).
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphabetic() || c.is_ascii_digit() || matches!(c, '_' | '-' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a file's headings; a repeated one gets `-1`, `-2`, … as on GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let mut heading = line[hashes..]
            .trim()
            .trim_end_matches('#')
            .trim()
            .to_string();
        // A link in a heading shows its text only.
        for target in link_targets(&heading) {
            heading = heading.replace(&format!("]({target})"), "]");
        }
        let base = slug(&heading);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The numbers of a text: runs of digits with `.` or `,` between digits (`1,058`, `0.070`,
/// `50,100,200`). A run joined to a letter or `_` is part of a word, not a number: `H200`,
/// `sm_90`, `v1.5.0`, a commit's `c19eb4d`.
fn numbers(text: &str) -> BTreeSet<String> {
    let chars: Vec<char> = text.chars().collect();
    let digit = |i: usize| chars.get(i).is_some_and(char::is_ascii_digit);
    let part = |i: usize| {
        let c = chars[i];
        c.is_ascii_alphanumeric()
            || c == '_'
            || (matches!(c, '.' | ',') && i > 0 && digit(i - 1) && digit(i + 1))
    };
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        if !part(i) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && part(i) {
            i += 1;
        }
        let word = &chars[start..i];
        if word
            .iter()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ','))
        {
            out.insert(word.iter().collect());
        }
    }
    out
}

/// `dir/target` with `.` and `..` resolved; None when it leaves the root.
fn resolve(dir: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    let joined = match target.strip_prefix('/') {
        Some(from_root) => from_root.to_string(),
        None => format!("{dir}/{target}"),
    };
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

fn folder_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

// ---------------------------------------------------------------------------------------------
// The checks.

/// Every problem found, one sentence each; empty when all holds.
fn problems(files: &dyn Files) -> Vec<String> {
    let mut out = Vec::new();
    let Some(page) = files.text(PAGE) else {
        return vec![format!("{PAGE} cannot be read")];
    };
    let lines = page.lines().count();
    if lines > MAX_LINES {
        out.push(format!("{PAGE} has {lines} lines, more than {MAX_LINES}"));
    }
    let records = files.markdown_under(RECORDS);
    let checked: BTreeSet<&str> = records.iter().map(String::as_str).chain([PAGE]).collect();

    // Links: each must reach something; the markdown files they reach make the graph.
    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for &doc in &checked {
        let text = files.text(doc).unwrap_or_default();
        let own_anchors = anchors(&text);
        for (number, line) in prose_lines(&text) {
            for target in link_targets(line) {
                let at = format!("{doc}:{number}");
                if target.is_empty() {
                    out.push(format!("{at}: a link with no target"));
                    continue;
                }
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target.as_str(), None),
                };
                let path = percent_decoded(path);
                if path.is_empty() {
                    if let Some(a) = anchor.filter(|a| !own_anchors.contains(*a)) {
                        out.push(format!("{at}: `#{a}` is no heading of {doc}"));
                    }
                    continue;
                }
                let Some(resolved) = resolve(folder_of(doc), &path) else {
                    out.push(format!("{at}: `{target}` leads out of the repository"));
                    continue;
                };
                if !files.exists(&resolved) {
                    out.push(format!("{at}: `{target}` leads to no file ({resolved})"));
                    continue;
                }
                if let Some(a) = anchor {
                    let headings = files
                        .text(&resolved)
                        .map(|t| anchors(&t))
                        .unwrap_or_default();
                    if !headings.contains(a) {
                        out.push(format!("{at}: `#{a}` is no heading of {resolved}"));
                    }
                }
                if resolved.ends_with(".md") {
                    edges.entry(doc).or_default().insert(resolved);
                }
            }
        }
    }

    // Every record reached from the first page.
    let mut reached: BTreeSet<String> = BTreeSet::from([PAGE.to_string()]);
    let mut queue: VecDeque<String> = VecDeque::from([PAGE.to_string()]);
    while let Some(doc) = queue.pop_front() {
        for next in edges.get(doc.as_str()).into_iter().flatten() {
            if checked.contains(next.as_str()) && reached.insert(next.clone()) {
                queue.push_back(next.clone());
            }
        }
    }
    for record in &records {
        if !reached.contains(record) {
            out.push(format!(
                "{record} is linked from neither {PAGE} nor a record it leads to"
            ));
        }
    }

    // Every number of a section of the first page in a file the section links to.
    let mut sections: Vec<(String, Vec<&str>)> = vec![("(top)".to_string(), Vec::new())];
    for (_, line) in prose_lines(&page) {
        if let Some(title) = line.strip_prefix("## ") {
            sections.push((title.to_string(), Vec::new()));
        }
        sections.last_mut().expect("a section").1.push(line);
    }
    // Numbers inside code blocks count too: the commands are part of the figure.
    let mut fenced: Vec<&str> = Vec::new();
    let mut fence = false;
    for line in page.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
        } else if fence {
            fenced.push(line);
        }
    }
    if !fenced.is_empty() {
        out.push(format!(
            "{PAGE}: keep commands inline; a fenced block is not checked for numbers"
        ));
    }
    for (title, lines) in &sections {
        let mut text = String::new();
        let mut sources = BTreeSet::new();
        for line in lines {
            let mut shown = line.to_string();
            for target in link_targets(line) {
                shown = shown.replace(&format!("]({target})"), "]");
                let path = percent_decoded(target.split('#').next().unwrap_or(""));
                if let Some(resolved) = resolve("", &path).filter(|p| p.ends_with(".md")) {
                    sources.insert(resolved);
                }
            }
            text.push_str(&shown);
            text.push('\n');
        }
        let known: BTreeSet<String> = sources
            .iter()
            .filter_map(|s| files.text(s))
            .flat_map(|t| numbers(&t))
            .collect();
        for n in numbers(&text).difference(&known) {
            out.push(format!(
                "{PAGE}, section \"{title}\": {n} is in none of the files it links to ({})",
                sources.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    out
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn benchmarks_page_links_and_records_hold() {
    let found = problems(&Disk(workspace_root()));
    assert!(
        found.is_empty(),
        "{} problem(s):\n{}",
        found.len(),
        found.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The checker on small trees: quiet on a sound one, and each fault reported.

/// A sound tree: a first page, two records (one reached through the other), a raw summary and a
/// data file.
fn sound() -> BTreeMap<String, String> {
    let page = "# Benchmarks\n\nSee [the index](benchmarks/README.md).\n\n## Speed\n\n\
                The search took 4.51 s [4.31–4.94] ([record](benchmarks/records/speed.md#a-run-2026-11-23)).\n";
    let index = "# Index\n\n- [speed](records/speed.md)\n";
    let speed = "# Speed\n\n## A run, 2026-11-23\n\nIt took 4.51 s [4.31–4.94] \
                 ([raw](../2026-11-23-run/summary.md), [data](../2026-11-23-run/times.txt)).\n\n\
                 ```sh\n# not a heading\n```\n";
    let summary = "# summary\n\n| run | wall |\n|---|---|\n| 1 | 4.51 s |\n";
    BTreeMap::from([
        (PAGE.to_string(), page.to_string()),
        ("benchmarks/README.md".to_string(), index.to_string()),
        ("benchmarks/records/speed.md".to_string(), speed.to_string()),
        (
            "benchmarks/2026-11-23-run/summary.md".to_string(),
            summary.to_string(),
        ),
        (
            "benchmarks/2026-11-23-run/times.txt".to_string(),
            "4.51\n".to_string(),
        ),
    ])
}

fn problems_with(edit: impl FnOnce(&mut BTreeMap<String, String>)) -> Vec<String> {
    let mut tree = sound();
    edit(&mut tree);
    problems(&Memory(tree))
}

fn edit_file(tree: &mut BTreeMap<String, String>, path: &str, from: &str, to: &str) {
    let text = tree.get_mut(path).expect("a file of the tree");
    assert!(text.contains(from), "{path} has no {from:?}");
    *text = text.replacen(from, to, 1);
}

#[test]
fn a_sound_tree_has_no_problems() {
    assert_eq!(problems(&Memory(sound())), Vec::<String>::new());
}

#[test]
fn a_broken_link_on_the_page_is_reported() {
    let found = problems_with(|t| {
        edit_file(
            t,
            PAGE,
            "benchmarks/records/speed.md#",
            "benchmarks/records/sped.md#",
        )
    });
    assert!(
        found.iter().any(|p| p.starts_with("BENCHMARKS.md:7: ")
            && p.contains("leads to no file (benchmarks/records/sped.md)")),
        "{found:?}"
    );
}

#[test]
fn a_broken_link_in_a_record_is_reported() {
    let found = problems_with(|t| {
        edit_file(
            t,
            "benchmarks/records/speed.md",
            "../2026-11-23-run/",
            "../2026-11-24-run/",
        )
    });
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("benchmarks/records/speed.md:5: ")
                && p.contains("leads to no file (benchmarks/2026-11-24-run/summary.md)")),
        "{found:?}"
    );
}

#[test]
fn an_anchor_without_its_heading_is_reported() {
    let found = problems_with(|t| edit_file(t, PAGE, "#a-run-2026-11-23", "#a-run-2026-11-24"));
    assert_eq!(
        found,
        vec!["BENCHMARKS.md:7: `#a-run-2026-11-24` is no heading of benchmarks/records/speed.md"]
    );
}

#[test]
fn a_record_nobody_links_is_reported() {
    let found = problems_with(|t| {
        t.insert(
            "benchmarks/records/lost.md".to_string(),
            "# Lost\n\n3.5 s\n".to_string(),
        );
    });
    assert_eq!(
        found,
        vec!["benchmarks/records/lost.md is linked from neither BENCHMARKS.md nor a record it leads to"]
    );
}

#[test]
fn a_long_page_is_reported() {
    let found = problems_with(|t| {
        t.get_mut(PAGE)
            .expect("the page")
            .push_str(&"\n".repeat(MAX_LINES));
    });
    assert_eq!(
        found,
        vec![format!(
            "BENCHMARKS.md has {} lines, more than 150",
            7 + MAX_LINES
        )]
    );
}

#[test]
fn a_number_not_in_its_record_is_reported() {
    let found = problems_with(|t| edit_file(t, PAGE, "4.51 s [4.31", "4.15 s [4.31"));
    assert_eq!(
        found,
        vec![
            "BENCHMARKS.md, section \"Speed\": 4.15 is in none of the files it links to \
             (benchmarks/records/speed.md)"
        ]
    );
}

#[test]
fn slugs_and_numbers_read_as_github_and_the_page_mean() {
    assert_eq!(
        slug("Compile workers only for images not cached, looks every √2 (issue 24), H200"),
        "compile-workers-only-for-images-not-cached-looks-every-2-issue-24-h200"
    );
    assert_eq!(
        slug("Runtime autotuner against `cargo gputune search` (issue #7)"),
        "runtime-autotuner-against-cargo-gputune-search-issue-7"
    );
    let found: Vec<String> =
        numbers("H200 sm_90 c19eb4d v1.5.0 2^26: 1,058 s, 0.070. −0.069 50,100,200 8B")
            .into_iter()
            .collect();
    assert_eq!(found, ["0.069", "0.070", "1,058", "2", "26", "50,100,200"]);
    assert_eq!(
        resolve("benchmarks/records", "../2026/x.svg").as_deref(),
        Some("benchmarks/2026/x.svg")
    );
    assert_eq!(resolve("", "../outside"), None);
    assert_eq!(
        link_targets("a [b](c.md#d) `[e](f)` ![g](<h i.svg>)"),
        ["c.md#d", "h i.svg"]
    );
}
