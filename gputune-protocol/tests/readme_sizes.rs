//! README's size claim for the SGEMM example ("its `#[tune]` wrapper is N lines of code; with the
//! bench and the exact answers it checks every variant against, M") is what the example's files
//! hold: lines of code, comments, blank lines and tests left out. An edit to the example that
//! changes either count fails here until README says the new one.

use std::path::Path;

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("cannot read {}: {e}", full.display()))
}

/// Lines of Rust code: not blank, not a comment (`//`, `///`, `//!`), and before the first
/// `#[cfg(test)]` (the tests).
fn code_lines(text: &str) -> Vec<&str> {
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .filter(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with("//")
        })
        .collect()
}

/// The wrapper: the kernel handle's `static` and the `#[tune]` function, from its attribute to
/// the function's closing brace.
fn wrapper_lines(lib: &str) -> usize {
    let code = code_lines(lib);
    let handle = code
        .iter()
        .filter(|l| l.starts_with("static ") && l.contains("Kernel::new"))
        .count();
    let start = code
        .iter()
        .position(|l| l.starts_with("#[tune("))
        .expect("a #[tune] function");
    let end = start
        + code[start..]
            .iter()
            .position(|l| *l == "}")
            .expect("its closing brace");
    handle + end - start + 1
}

/// The number right after `marker` in `text` (whitespace runs read as one space).
fn number_after(text: &str, marker: &str) -> usize {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = flat
        .find(marker)
        .unwrap_or_else(|| panic!("README no longer says \"{marker}\""));
    flat[at + marker.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number after \"{marker}\" in README"))
}

#[test]
fn the_readme_gives_the_sgemm_example_s_size_as_it_is() {
    let readme = read("README.md");
    let lib = read("examples/sgemm-cuda/src/lib.rs");
    let bench = read("examples/sgemm-cuda/benches/sgemm.rs");
    let wrapper = number_after(&readme, "`#[tune]` wrapper is ");
    let total = number_after(&readme, "checks every variant against, ");
    assert_eq!(
        wrapper,
        wrapper_lines(&lib),
        "README's wrapper size of examples/sgemm-cuda"
    );
    assert_eq!(
        total,
        code_lines(&lib).len() + code_lines(&bench).len(),
        "README's size of examples/sgemm-cuda with its bench"
    );
}

#[test]
fn the_count_leaves_out_comments_blank_lines_and_tests() {
    let text = "//! doc\n\nuse x;\n/// item doc\nstatic K: Kernel = Kernel::new(S, \"k\");\n\
                #[tune(a = [1, 2], base(a = 1))]\npub fn f() {\n    // why\n    g();\n}\n\
                #[cfg(test)]\nmod tests {\n    fn t() {}\n}\n";
    assert_eq!(code_lines(text).len(), 6);
    assert_eq!(wrapper_lines(text), 5);
    assert_eq!(
        number_after("a `#[tune]` wrapper is\n  30 lines", "wrapper is "),
        30
    );
}
