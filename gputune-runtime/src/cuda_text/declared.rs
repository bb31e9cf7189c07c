//! Which names a CUDA C++ source declares itself: a tuning parameter's `-DNAME=value` would
//! replace every such declaration by the value (`const int BLOCK_SIZE = 256;` becomes
//! `const int 256 = 256;`), and NVRTC then reports a syntax error far from the cause.
//!
//! Read without a compiler, as [`super::identifiers`] reads: comments and literals left out,
//! preprocessor lines apart from code. A source that *uses* the name (`#ifndef BLOCK_SIZE`,
//! `#if BLOCK_SIZE > 128`, `float tile[BLOCK_SIZE]`, `i * BLOCK_SIZE`) is the normal case and
//! declares nothing. Declarations are a `#define` of the name outside a guard that only
//! defines it where it is undefined (`#ifndef NAME`, `#if !defined(NAME)`, the `#else` of an
//! `#ifdef NAME`), and in code: the name after a type or another declaring word (`int NAME`,
//! `constexpr auto NAME =`, `void NAME(`, a parameter, `struct NAME`, `typename NAME`), after a
//! pointer or reference to a built-in type (`float* NAME`), as an enumerator, or assigned to
//! (`NAME = …`, `NAME += …`, `++NAME`).

use std::collections::HashMap;

/// Where a source declares a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// 1-based line of the declaration.
    pub line: usize,
    /// That line, trimmed (at most 100 characters).
    pub text: String,
    /// Whether it is a `#define` (else a declaration or assignment in code).
    pub define: bool,
}

/// Words after which an identifier is not being declared: it is an expression's operand.
const NOT_DECLARING: &[&str] = &[
    "return",
    "case",
    "sizeof",
    "alignof",
    "else",
    "do",
    "new",
    "delete",
    "throw",
    "goto",
    "co_return",
    "co_yield",
    "co_await",
    "typeid",
    "operator",
    "and",
    "or",
    "not",
    "xor",
    "bitand",
    "bitor",
    "compl",
    "not_eq",
    "and_eq",
    "or_eq",
    "xor_eq",
    "defined",
];

/// Built-in type words: `float* NAME` declares, where `n * NAME` multiplies.
const TYPE_WORDS: &[&str] = &[
    "void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
    "auto", "const", "volatile", "size_t", "half", "int2", "int4", "float2", "float4", "double2",
    "uint2", "uint4",
];

/// What may follow a declared name: `=`, `;`, `,`, `(`, `)`, `[`, `{`, `:`, `>` (a template
/// parameter).
const AFTER_DECLARED: &[&str] = &["=", ";", ",", "(", ")", "[", "{", ":", ">"];

/// Assignments: a name assigned to is a variable.
const ASSIGNING: &[&str] = &[
    "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--",
];

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Punct(&'static str),
    Other,
}

/// Multi-character punctuators, longest first.
const PUNCTS: &[&str] = &[
    "<<=", ">>=", "...", "->", "::", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "=", ";", ",", "(", ")", "[", "]", "{", "}",
    ":", "*", "&", "<", ">", ".", "+", "-", "/", "%", "!", "~", "^", "|", "?",
];

/// `text` with comments and the contents of literals blanked (newlines kept, so that lines
/// keep their numbers) and line continuations joined.
fn blank(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut pending = 0;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                if bytes[i] == b'\n' {
                    out.push(b'\n');
                }
                i += 1;
            }
            out.push(b' ');
            i += 2;
        } else if c == b'"' || c == b'\'' {
            out.push(b'0');
            i += 1;
            while i < bytes.len() && bytes[i] != c && bytes[i] != b'\n' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
            // A continued line is one logical line; its newlines come after it, so that the
            // lines after it keep their numbers.
            out.push(b' ');
            pending += 1;
            i += 2;
        } else if c == b'\n' {
            out.extend(std::iter::repeat(b'\n').take(pending + 1));
            pending = 0;
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The tokens of one line of code.
fn tokens(line: &str) -> Vec<Token> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token::Ident(line[start..i].to_string()));
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
            out.push(Token::Other);
        } else if let Some(p) = PUNCTS.iter().find(|p| bytes[i..].starts_with(p.as_bytes())) {
            out.push(Token::Punct(p));
            i += p.len();
        } else {
            out.push(Token::Other);
            i += 1;
        }
    }
    out
}

/// A conditional's frame: the name it guards, and whether the name is undefined in the
/// branch being read.
struct Frame {
    /// `(name, undefined in the first branch)` for `#ifdef`/`#ifndef`/`#if [!]defined(name)`.
    guard: Option<(String, bool)>,
    /// Whether the first branch is over (`#else`/`#elif` seen).
    flipped: bool,
}

impl Frame {
    fn undefines(&self, name: &str) -> bool {
        matches!(&self.guard, Some((g, first)) if g == name && *first != self.flipped)
    }
}

/// The name a condition tests, and whether it is undefined where the condition holds:
/// `defined(X)` / `defined X` (false) and `!defined(X)` (true), alone or first of an `&&`.
fn tested(condition: &str) -> Option<(String, bool)> {
    let c = condition.trim();
    let (negated, rest) = match c.strip_prefix('!') {
        Some(r) => (true, r.trim_start()),
        None => (false, c),
    };
    let rest = rest.strip_prefix("defined")?.trim_start();
    let (inner, tail) = match rest.strip_prefix('(') {
        Some(r) => {
            let end = r.find(')')?;
            (r[..end].trim(), &r[end + 1..])
        }
        None => {
            let end = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        }
    };
    let tail = tail.trim();
    if inner.is_empty() || !(tail.is_empty() || tail.starts_with("&&")) {
        return None;
    }
    Some((inner.to_string(), negated))
}

/// Every name `text` declares, with its first declaration.
pub fn declared(text: &str) -> HashMap<String, Declared> {
    let blanked = blank(text);
    let original: Vec<&str> = text.lines().collect();
    let mut out: HashMap<String, Declared> = HashMap::new();
    let mut note = |name: &str, line: usize, define: bool| {
        out.entry(name.to_string()).or_insert_with(|| Declared {
            line: line + 1,
            text: original
                .get(line)
                .map_or(String::new(), |l| l.trim().chars().take(100).collect()),
            define,
        });
    };
    let mut frames: Vec<Frame> = Vec::new();
    // Code tokens with their line, across lines: a declaration may span several.
    let mut code: Vec<(Token, usize)> = Vec::new();
    for (n, line) in blanked.lines().enumerate() {
        let trimmed = line.trim_start();
        let Some(directive) = trimmed.strip_prefix('#') else {
            code.extend(tokens(line).into_iter().map(|t| (t, n)));
            continue;
        };
        let directive = directive.trim_start();
        let word_end = directive
            .find(|ch: char| !ch.is_ascii_alphabetic())
            .unwrap_or(directive.len());
        let (word, rest) = directive.split_at(word_end);
        let first_name = || {
            let r = rest.trim_start();
            let end = r
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(r.len());
            r[..end].to_string()
        };
        match word {
            "ifndef" => frames.push(Frame {
                guard: Some((first_name(), true)),
                flipped: false,
            }),
            "ifdef" => frames.push(Frame {
                guard: Some((first_name(), false)),
                flipped: false,
            }),
            "if" => frames.push(Frame {
                guard: tested(rest),
                flipped: false,
            }),
            "else" | "elif" | "elifdef" | "elifndef" => {
                if let Some(f) = frames.last_mut() {
                    f.flipped = true;
                }
            }
            "endif" => {
                frames.pop();
            }
            "define" => {
                let name = first_name();
                if !name.is_empty() && !frames.iter().any(|f| f.undefines(&name)) {
                    note(&name, n, true);
                }
            }
            _ => {}
        }
    }
    let ident = |i: usize| match code.get(i) {
        Some((Token::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
    let punct = |i: usize| match code.get(i) {
        Some((Token::Punct(p), _)) => Some(*p),
        _ => None,
    };
    // Enum bodies: the brace depth at which their enumerators are listed.
    let mut depth = 0usize;
    let mut enum_pending = false;
    let mut enums: Vec<usize> = Vec::new();
    for (i, (_, line)) in code.iter().enumerate() {
        match punct(i) {
            Some("{") => {
                depth += 1;
                if enum_pending {
                    enums.push(depth);
                    enum_pending = false;
                }
            }
            Some("}") => {
                if enums.last() == Some(&depth) {
                    enums.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Some(";") => enum_pending = false,
            _ => {}
        }
        let Some(name) = ident(i) else {
            continue;
        };
        if name == "enum" {
            enum_pending = true;
            continue;
        }
        let prev = i.checked_sub(1);
        let next_p = punct(i + 1);
        let after_type = prev
            .and_then(ident)
            .is_some_and(|p| !NOT_DECLARING.contains(&p))
            && next_p.is_some_and(|p| AFTER_DECLARED.contains(&p));
        let after_pointer = {
            let mut j = prev;
            while let Some(k) = j.filter(|&k| matches!(punct(k), Some("*" | "&" | "&&"))) {
                j = k.checked_sub(1);
            }
            j != prev
                && j.and_then(ident).is_some_and(|t| TYPE_WORDS.contains(&t))
                && next_p.is_some_and(|p| AFTER_DECLARED.contains(&p))
        };
        let enumerator = enums.last() == Some(&depth)
            && prev.and_then(punct).is_some_and(|p| p == "{" || p == ",")
            && next_p.is_some_and(|p| p == "," || p == "}" || p == "=");
        let assigned = next_p.is_some_and(|p| ASSIGNING.contains(&p))
            || prev.and_then(punct).is_some_and(|p| p == "++" || p == "--");
        if after_type || after_pointer || enumerator || assigned {
            note(name, *line, false);
        }
    }
    out
}

impl Declared {
    /// Why tuning parameter `param`, whose define is `-D{macro_name}=…`, cannot compile with
    /// the source `file` that declares `macro_name` here, and what to do instead.
    pub fn clash(&self, param: &str, macro_name: &str, file: &str) -> String {
        let (what, fix) = if self.define {
            (
                "defines",
                format!(
                    "guard that `#define` with `#ifndef {macro_name}` … `#endif`, so that the \
                     parameter's value wins"
                ),
            )
        } else {
            (
                "declares",
                format!(
                    "rename the source's `{macro_name}`, or have the source read the parameter \
                     as another macro (`Kernel::rename(&[(\"{param}\", \"TUNED_{macro_name}\")])` \
                     and `TUNED_{macro_name}` in the source)"
                ),
            )
        };
        format!(
            "tuning parameter `{param}` becomes the define `{macro_name}`, but {file} {what} \
             `{macro_name}` itself (line {}: `{}`): the define would replace it there, and the \
             compiler's error would point at the replaced text. Name the parameter differently, \
             or {fix}",
            self.line, self.text
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declares(text: &str, name: &str) -> bool {
        declared(text).contains_key(name)
    }

    #[test]
    fn uses_of_the_macro_are_not_declarations() {
        let uses = r#"
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256   // a default the define replaces
#endif
#if BLOCK_SIZE > 128 && defined(FAST)
#pragma unroll BLOCK_SIZE
#endif
__global__ void __launch_bounds__(BLOCK_SIZE) k(const float* x, float* y, int n) {
    __shared__ float tile[BLOCK_SIZE];
    int i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    static_assert(BLOCK_SIZE % 32 == 0, "BLOCK_SIZE = warps");
    for (int s = BLOCK_SIZE / 2; s > 0; s >>= 1) { tile[s] += (float)BLOCK_SIZE; }
    if (n == BLOCK_SIZE) return;
    y[i] = x[i] * BLOCK_SIZE;
    switch (n) { case BLOCK_SIZE: break; }
    return foo<BLOCK_SIZE>(sizeof BLOCK_SIZE);
}
"#;
        assert!(!declares(uses, "BLOCK_SIZE"), "{:?}", declared(uses));
        // Other guards that define it only where it is undefined.
        for guarded in [
            "#if !defined(BLOCK_SIZE)\n#define BLOCK_SIZE 64\n#endif",
            "#if !defined BLOCK_SIZE && X\n#define BLOCK_SIZE 64\n#endif",
            "#ifdef BLOCK_SIZE\n#else\n#define BLOCK_SIZE 64\n#endif",
            "#ifndef A\n#ifndef BLOCK_SIZE\n#define BLOCK_SIZE 64\n#endif\n#endif",
        ] {
            assert!(!declares(guarded, "BLOCK_SIZE"), "{guarded}");
        }
    }

    #[test]
    fn declarations_and_definitions_of_the_name_are_found_with_their_line() {
        let cases = [
            ("#define BLOCK_SIZE 256", true),
            ("#define BLOCK_SIZE(x) (x)", true),
            ("#ifdef BLOCK_SIZE\n#define BLOCK_SIZE 2\n#endif", true),
            (
                "#ifndef BLOCK_SIZE\n#else\n#define BLOCK_SIZE 2\n#endif",
                true,
            ),
            ("#ifndef OTHER\n#define BLOCK_SIZE 2\n#endif", true),
            ("const int BLOCK_SIZE = 256;", false),
            ("constexpr unsigned int BLOCK_SIZE = 256;", false),
            ("static constexpr auto BLOCK_SIZE{256};", false),
            ("__device__ int BLOCK_SIZE() { return 4; }", false),
            ("__global__ void k(float* x, int BLOCK_SIZE) {}", false),
            ("template <int BLOCK_SIZE> __global__ void k() {}", false),
            ("template <typename BLOCK_SIZE> struct S {};", false),
            ("struct BLOCK_SIZE { int x; };", false),
            ("enum { WARP = 32, BLOCK_SIZE };", false),
            ("enum class E : int { BLOCK_SIZE = 4 };", false),
            ("void f(const float* BLOCK_SIZE);", false),
            ("void f(float &BLOCK_SIZE);", false),
            ("int n;\nvoid f() { BLOCK_SIZE = n; }", false),
            ("void f() { BLOCK_SIZE += 2; }", false),
            ("void f() { ++BLOCK_SIZE; }", false),
            ("for (auto BLOCK_SIZE : v) {}", false),
            ("using BLOCK_SIZE = float;", false),
        ];
        for (text, define) in cases {
            let found = declared(text);
            let d = found
                .get("BLOCK_SIZE")
                .unwrap_or_else(|| panic!("not found in {text:?}: {found:?}"));
            assert_eq!(d.define, define, "{text}");
            assert!(d.text.contains("BLOCK_SIZE"), "{text}: {d:?}");
        }
        let d = &declared("// a comment\n/* two\nlines */\n  const int BLOCK_SIZE = 1;\n")
            ["BLOCK_SIZE"];
        assert_eq!((d.line, d.text.as_str()), (4, "const int BLOCK_SIZE = 1;"));
        let d = &declared("#define A \\\n  1\n#define BLOCK_SIZE 2\n")["BLOCK_SIZE"];
        assert_eq!(d.line, 3, "continued lines keep their numbers");
    }

    #[test]
    fn the_clash_says_where_and_what_to_do() {
        let d = &declared("\nconstexpr int BLOCK_SIZE = 256;")["BLOCK_SIZE"];
        let m = d.clash("block_size", "BLOCK_SIZE", "layernorm.cu");
        assert!(
            m.contains("`block_size`") && m.contains("layernorm.cu declares"),
            "{m}"
        );
        assert!(
            m.contains("line 2: `constexpr int BLOCK_SIZE = 256;`"),
            "{m}"
        );
        assert!(m.contains("TUNED_BLOCK_SIZE"), "{m}");
        let d = &declared("#define BLOCK_SIZE 256")["BLOCK_SIZE"];
        let m = d.clash("block_size", "BLOCK_SIZE", "the kernel source");
        assert!(
            m.contains("defines") && m.contains("#ifndef BLOCK_SIZE"),
            "{m}"
        );
    }

    #[test]
    fn a_multiplication_and_an_argument_list_are_not_declarations() {
        let text = "void f(int n, int* y) { y[0] = n * BLOCK_SIZE; g(n, BLOCK_SIZE, 2);\n\
                    y[1] = (int) BLOCK_SIZE; h(BLOCK_SIZE); y[2] = s.x + BLOCK_SIZE; }\n\
                    const char* name = \"int BLOCK_SIZE = 3;\";";
        assert!(!declares(text, "BLOCK_SIZE"), "{:?}", declared(text));
        assert!(!declares(
            "float é = 1; // ü\nint x = BLOCK_SIZE;",
            "BLOCK_SIZE"
        ));
        // The names that are declared there are found.
        for name in ["f", "n", "y", "name"] {
            assert!(declares(text, name), "{name}");
        }
    }
}
