//! `kernel!`'s half that reads files: a `.cu` file of the crate and, transitively, every file
//! it includes with `#include "…"` that exists next to the file that includes it, each under
//! the name it is included by (what NVRTC matches a header handed to it against).

use std::path::{Path, PathBuf};

/// One header to embed: the name it is included by and the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    /// As written between the quotes (`my_utils.cuh`, `detail/load.cuh`).
    pub name: String,
    /// The file it names.
    pub path: PathBuf,
}

/// The headers `main` includes with quotes, directly or through one another, in the order
/// first included. An include that names no file next to its includer is left to the
/// include directories at compile time; two files included under one name are an error.
pub(crate) fn headers_of(main: &Path) -> Result<Vec<Header>, String> {
    let mut found: Vec<Header> = Vec::new();
    let mut queue = vec![main.to_path_buf()];
    let mut read: Vec<PathBuf> = Vec::new();
    while let Some(file) = queue.pop() {
        let canonical = file.canonicalize().unwrap_or_else(|_| file.clone());
        if read.contains(&canonical) {
            continue;
        }
        read.push(canonical);
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let dir = file.parent().unwrap_or(Path::new("."));
        let mut next = Vec::new();
        for name in quoted_includes(&text) {
            let path = dir.join(&name);
            if !path.is_file() {
                continue;
            }
            match found.iter().find(|h| h.name == name) {
                Some(known) if same_file(&known.path, &path) => {}
                Some(known) => {
                    return Err(format!(
                        "two files are included as \"{name}\": {} and {}; NVRTC finds an \
                         embedded header by the name it is included by, so give them \
                         different names",
                        known.path.display(),
                        path.display()
                    ))
                }
                None => {
                    found.push(Header {
                        name,
                        path: path.clone(),
                    });
                    next.push(path);
                }
            }
        }
        // Depth-first in include order.
        queue.extend(next.into_iter().rev());
    }
    Ok(found)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The names of `#include "…"` directives of `text`, in order, outside comments.
pub(crate) fn quoted_includes(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let code = strip_comments(line, &mut in_block);
        let Some(rest) = code.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("include") else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix('"') else {
            continue;
        };
        if let Some(end) = rest.find('"') {
            names.push(rest[..end].to_string());
        }
    }
    names
}

/// `line` without its comments; `in_block` carries an open `/* … */` across lines.
fn strip_comments(line: &str, in_block: &mut bool) -> String {
    let mut out = String::new();
    let mut rest = line;
    loop {
        if *in_block {
            match rest.find("*/") {
                Some(end) => {
                    rest = &rest[end + 2..];
                    *in_block = false;
                }
                None => return out,
            }
        }
        let line_comment = rest.find("//");
        let block = rest.find("/*");
        match (line_comment, block) {
            (Some(l), Some(b)) if l < b => return out + &rest[..l],
            (Some(l), None) => return out + &rest[..l],
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                rest = &rest[b + 2..];
                *in_block = true;
            }
            (None, None) => return out + rest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tree(PathBuf);

    impl Tree {
        fn new(name: &str) -> Tree {
            let dir =
                std::env::temp_dir().join(format!("gputune-embed-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("temp dir");
            Tree(dir)
        }

        fn file(&self, rel: &str, text: &str) -> PathBuf {
            let path = self.0.join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            std::fs::write(&path, text).expect("write");
            path
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn includes_are_read_outside_comments_in_order() {
        let text = "#include \"a.cuh\"\n  #  include \"b/c.cuh\" // why\n// #include \"no.cuh\"\n\
                    /* #include \"no2.cuh\"\n #include \"no3.cuh\" */ #include \"after.cuh\"\n\
                    #include <cub/cub.cuh>\n#include \"d.cuh\" /* x */";
        // A comment before `#` is whitespace to the preprocessor.
        assert_eq!(
            quoted_includes(text),
            ["a.cuh", "b/c.cuh", "after.cuh", "d.cuh"]
        );
    }

    #[test]
    fn headers_are_found_transitively_next_to_their_includer() {
        let tree = Tree::new("found");
        let main = tree.file(
            "src/k.cu",
            "#include \"common.cuh\"\n#include \"detail/load.cuh\"\n#include \"absent.cuh\"\n\
             #include <cuda_bf16.h>\n",
        );
        tree.file("src/common.cuh", "#pragma once\n");
        tree.file(
            "src/detail/load.cuh",
            "#include \"../common.cuh\"\n#include \"vec.cuh\"\n",
        );
        tree.file("src/detail/vec.cuh", "#include \"load.cuh\"\n");
        let found = headers_of(&main).expect("headers");
        let names: Vec<&str> = found.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "common.cuh",
                "detail/load.cuh",
                "../common.cuh",
                "vec.cuh",
                "load.cuh"
            ]
        );
        assert!(found[3].path.ends_with("src/detail/vec.cuh"));
    }

    #[test]
    fn two_files_under_one_name_are_an_error() {
        let tree = Tree::new("clash");
        let main = tree.file("k.cu", "#include \"a/x.cuh\"\n#include \"b/y.cuh\"\n");
        tree.file("a/x.cuh", "#include \"util.cuh\"\n");
        tree.file("a/util.cuh", "");
        tree.file("b/y.cuh", "#include \"util.cuh\"\n");
        tree.file("b/util.cuh", "// another\n");
        let e = headers_of(&main).expect_err("a clash");
        assert!(e.contains("\"util.cuh\""), "{e}");
    }

    #[test]
    fn an_unreadable_main_file_is_an_error() {
        let e = headers_of(Path::new("/nonexistent/k.cu")).expect_err("missing");
        assert!(e.contains("/nonexistent/k.cu"), "{e}");
    }
}
