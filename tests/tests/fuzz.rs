//! Generated inputs against every reader of user or process input (issue 30): the `#[tune]`
//! grammar and its enumeration, `gputune.toml`, the bench flags and `-a` axes, the protocol's
//! documents and `--jsonl` events as `cargo gputune` reads them, the Kernel Tuner cache / T4
//! importers, and a store with corrupt pages. Every reader must answer with a value or an error,
//! never a panic or a hang, and the grammar's enumeration must equal a brute-force evaluation
//! of `require` written here.
//!
//! Each test is one target of `gputune_tests::fuzz` (the engine: seeds, mutations, budget,
//! regressions). Under `cargo test` each runs for about a second and a half on a fixed seed;
//! `scripts/fuzz.sh` runs them for as long as it is asked, on fresh seeds.

use std::collections::BTreeSet;
use std::path::PathBuf;

use gputune_grammar::Value;
use gputune_protocol::{AxisDoc, BenchArgs, DevicesDoc, Event, ListDoc, ResultsDoc};
use gputune_tests::fuzz::{self, mutate, mutate_lines, Rng};

/// A mutated copy of one of `seeds`, changed `1..=max` times.
fn mutated(rng: &mut Rng, seeds: &[Vec<u8>], dictionary: &[&str], max: usize) -> Vec<u8> {
    let mut input = rng.pick(seeds).clone();
    let other = rng.pick(seeds).clone();
    for _ in 0..=rng.below(max) {
        mutate(rng, &mut input, dictionary, &other);
    }
    input
}

fn text(input: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(input)
}

// ---------------------------------------------------------------------------------------
// The #[tune] grammar: any text is an error or a space.

const GRAMMAR_TOKENS: &[&str] = &[
    "..=",
    "..",
    "pow2(",
    ".step_by(",
    "require(",
    "base(",
    "size(",
    "min(",
    "max(",
    "&&",
    "||",
    "!",
    "%",
    "/",
    "*",
    "-",
    "==",
    "!=",
    "<=",
    ">=",
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    "true",
    "false",
    "\"s\"",
    "x",
    "65535",
    "65536",
    "62",
    "63",
    "0",
    "-0",
    "1..=1000000",
];

#[test]
fn grammar_text() {
    let seeds = fuzz::seeds("grammar");
    assert!(
        !seeds.is_empty(),
        "tests/fuzz/seeds/grammar holds the examples' attributes"
    );
    fuzz::run(
        "grammar",
        |rng| mutated(rng, &seeds, GRAMMAR_TOKENS, 6),
        |input| {
            let Ok(spec) = gputune_grammar::parse_str(&text(input)) else {
                return Ok(());
            };
            let combinations: usize = spec.params.iter().map(|p| p.values.len()).product();
            if combinations > 200_000 {
                // Parsing bounded it (2^22); enumerating a space this size is the build's
                // work, not a reader's, so the generated inputs stop at parsing it.
                return Ok(());
            }
            let space = spec.space();
            let labels: BTreeSet<String> = space.iter().map(|p| p.label()).collect();
            if labels.len() != space.len() {
                return Err("two points share a label".into());
            }
            for p in &space {
                if !spec.admits(&p.values) {
                    return Err(format!("{} is enumerated but not admitted", p.label()));
                }
            }
            if spec.base.len() != spec.params.len() {
                return Err("base does not give every parameter a value".into());
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------
// The grammar's enumeration against a brute-force evaluation of `require`.

/// A `require` expression as generated here, with its own evaluator.
#[derive(Debug, Clone)]
enum Gen {
    Int(i64),
    Bool(bool),
    Param(usize),
    Not(Box<Gen>),
    Neg(Box<Gen>),
    Bin(&'static str, Box<Gen>, Box<Gen>),
    Call(&'static str, Box<Gen>, Box<Gen>),
}

/// The documented semantics of `require` (DESIGN's grammar and `Expr::eval`'s contract):
/// integer arithmetic that fails on overflow and division by zero, comparisons, `==`/`!=` on
/// any two values, `&&`/`||` short-circuiting on booleans, `!` on booleans, `min`/`max` on
/// integers. `None`: the point is not in the space.
fn eval(e: &Gen, point: &[Value]) -> Option<Value> {
    let int = |v: Value| match v {
        Value::Int(i) => Some(i),
        _ => None,
    };
    let boolean = |v: Value| match v {
        Value::Bool(b) => Some(b),
        _ => None,
    };
    Some(match e {
        Gen::Int(i) => Value::Int(*i),
        Gen::Bool(b) => Value::Bool(*b),
        Gen::Param(i) => point[*i].clone(),
        Gen::Not(a) => Value::Bool(!boolean(eval(a, point)?)?),
        Gen::Neg(a) => Value::Int(int(eval(a, point)?)?.checked_neg()?),
        Gen::Call(f, a, b) => {
            let (x, y) = (int(eval(a, point)?)?, int(eval(b, point)?)?);
            Value::Int(if *f == "min" { x.min(y) } else { x.max(y) })
        }
        Gen::Bin(op, a, b) => match *op {
            "&&" => Value::Bool(boolean(eval(a, point)?)? && boolean(eval(b, point)?)?),
            "||" => Value::Bool(boolean(eval(a, point)?)? || boolean(eval(b, point)?)?),
            "==" => Value::Bool(eval(a, point)? == eval(b, point)?),
            "!=" => Value::Bool(eval(a, point)? != eval(b, point)?),
            _ => {
                let (x, y) = (int(eval(a, point)?)?, int(eval(b, point)?)?);
                match *op {
                    "+" => Value::Int(x.checked_add(y)?),
                    "-" => Value::Int(x.checked_sub(y)?),
                    "*" => Value::Int(x.checked_mul(y)?),
                    "/" => Value::Int(x.checked_div(y)?),
                    "%" => Value::Int(x.checked_rem(y)?),
                    "<" => Value::Bool(x < y),
                    "<=" => Value::Bool(x <= y),
                    ">" => Value::Bool(x > y),
                    ">=" => Value::Bool(x >= y),
                    _ => unreachable!("generated operators only"),
                }
            }
        },
    })
}

/// Binding strength as Rust has it, weakest first: `||`, `&&`, comparisons, `+ -`, `* / %`,
/// then unary operators and atoms.
fn level(e: &Gen) -> u8 {
    match e {
        Gen::Bin(op, ..) => match *op {
            "||" => 1,
            "&&" => 2,
            "==" | "!=" | "<" | "<=" | ">" | ">=" => 3,
            "+" | "-" => 4,
            _ => 5,
        },
        Gen::Not(_) | Gen::Neg(_) => 6,
        _ => 7,
    }
}

/// Source text with only the parentheses precedence needs (and some more, at random), so the
/// parser's precedence and associativity are what is tested.
fn render(e: &Gen, names: &[String], rng: &mut Rng) -> String {
    let wrap = |s: String, need: bool, rng: &mut Rng| {
        if need || rng.one_in(6) {
            format!("({s})")
        } else {
            s
        }
    };
    match e {
        // A negative literal is `-n`, which is unary minus on `n`: parenthesised like one.
        Gen::Int(i) => i.to_string(),
        Gen::Bool(b) => b.to_string(),
        Gen::Param(i) => names[*i].clone(),
        Gen::Not(a) | Gen::Neg(a) => {
            let op = if matches!(e, Gen::Not(_)) { "!" } else { "-" };
            let inner = render(a, names, rng);
            let need = level(a) < 6 || matches!(**a, Gen::Int(i) if i < 0);
            format!("{op}{}", wrap(inner, need, rng))
        }
        Gen::Call(f, a, b) => format!("{f}({}, {})", render(a, names, rng), render(b, names, rng)),
        Gen::Bin(op, a, b) => {
            let l = level(e);
            let comparison = l == 3;
            let left = render(a, names, rng);
            let right = render(b, names, rng);
            // Left-associative: the right operand at the same level needs parentheses;
            // comparisons do not chain in Rust at all.
            let need_left = level(a) < l || (comparison && level(a) == 3);
            let need_right = level(b) <= l;
            let left_neg = matches!(**a, Gen::Int(i) if i < 0) && l >= 5;
            let right_neg = matches!(**b, Gen::Int(i) if i < 0);
            format!(
                "{} {op} {}",
                wrap(left, need_left || left_neg, rng),
                wrap(right, need_right || right_neg, rng)
            )
        }
    }
}

/// An expression of `depth` levels over `params` parameters (integers only, `bools` marks
/// the boolean ones), of boolean type when `boolean`.
fn gen_expr(rng: &mut Rng, depth: usize, boolean: bool, ints: &[usize], bools: &[usize]) -> Gen {
    let leaf = depth == 0 || rng.one_in(4);
    if boolean {
        if leaf {
            return match rng.below(3) {
                0 if !bools.is_empty() => Gen::Param(*rng.pick(bools)),
                1 => Gen::Bool(rng.one_in(2)),
                _ => {
                    let op = *rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
                    Gen::Bin(
                        op,
                        Box::new(gen_expr(rng, 0, false, ints, bools)),
                        Box::new(gen_expr(rng, 0, false, ints, bools)),
                    )
                }
            };
        }
        let sub = |rng: &mut Rng, b: bool| Box::new(gen_expr(rng, depth - 1, b, ints, bools));
        return match rng.below(5) {
            0 => Gen::Not(sub(rng, true)),
            1 => Gen::Bin(rng.choose(&["&&", "||"]), sub(rng, true), sub(rng, true)),
            2 => Gen::Bin(rng.choose(&["==", "!="]), sub(rng, true), sub(rng, true)),
            _ => Gen::Bin(
                rng.choose(&["<", "<=", ">", ">=", "==", "!="]),
                sub(rng, false),
                sub(rng, false),
            ),
        };
    }
    if leaf {
        return if !ints.is_empty() && rng.below(3) > 0 {
            Gen::Param(*rng.pick(ints))
        } else {
            Gen::Int(rng.range(-9, 40))
        };
    }
    let sub = |rng: &mut Rng| Box::new(gen_expr(rng, depth - 1, false, ints, bools));
    match rng.below(8) {
        0 => Gen::Neg(sub(rng)),
        1 => Gen::Call(rng.choose(&["min", "max"]), sub(rng), sub(rng)),
        _ => Gen::Bin(rng.choose(&["+", "-", "*", "/", "%"]), sub(rng), sub(rng)),
    }
}

/// One parameter: its source and its values, computed here from the form.
fn gen_param(rng: &mut Rng) -> (String, Vec<Value>) {
    match rng.below(6) {
        0 => {
            let (a, n) = (rng.range(-5, 20), rng.range(1, 6));
            (
                format!("{a}..={}", a + n - 1),
                (a..a + n).map(Value::Int).collect(),
            )
        }
        1 => {
            let (a, n) = (rng.range(0, 20), rng.range(1, 6));
            (
                format!("{a}..{}", a + n),
                (a..a + n).map(Value::Int).collect(),
            )
        }
        2 => {
            let (a, s, n) = (rng.range(0, 16), rng.range(1, 8), rng.range(1, 5));
            let end = a + s * (n - 1) + rng.range(0, s - 1);
            let values = (0..n).map(|i| Value::Int(a + s * i)).collect();
            (format!("({a}..={end}).step_by({s})"), values)
        }
        3 => {
            let (a, n) = (rng.range(0, 10), rng.range(1, 5));
            let values = (a..a + n).map(|e| Value::Int(1 << e)).collect();
            (format!("pow2({a}..={})", a + n - 1), values)
        }
        4 => {
            let mut values: Vec<i64> = Vec::new();
            for _ in 0..rng.range(1, 5) {
                let v = rng.range(-20, 64);
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            let text: Vec<String> = values.iter().map(i64::to_string).collect();
            (
                format!("[{}]", text.join(", ")),
                values.into_iter().map(Value::Int).collect(),
            )
        }
        _ => {
            let values = if rng.one_in(2) {
                vec![true, false]
            } else {
                vec![false]
            };
            let text: Vec<String> = values.iter().map(bool::to_string).collect();
            (
                format!("[{}]", text.join(", ")),
                values.into_iter().map(Value::Bool).collect(),
            )
        }
    }
}

#[test]
fn grammar_space_equals_brute_force_require() {
    // The input is the generator's state: a kept regression regenerates the same spec.
    let spec_of = |input: &[u8]| {
        let mut seed = [0u8; 8];
        for (i, b) in input.iter().take(8).enumerate() {
            seed[i] = *b;
        }
        let mut rng = Rng(u64::from_le_bytes(seed));
        let count = rng.range(1, 3) as usize;
        let names: Vec<String> = (0..count).map(|i| format!("p{i}")).collect();
        let params: Vec<(String, Vec<Value>)> = (0..count).map(|_| gen_param(&mut rng)).collect();
        let ints: Vec<usize> = (0..count)
            .filter(|&i| matches!(params[i].1[0], Value::Int(_)))
            .collect();
        let bools: Vec<usize> = (0..count)
            .filter(|&i| matches!(params[i].1[0], Value::Bool(_)))
            .collect();
        let requires: Vec<Gen> = (0..rng.below(3))
            .map(|_| {
                let depth = rng.below(4);
                gen_expr(&mut rng, depth, true, &ints, &bools)
            })
            .collect();
        let mut text: Vec<String> = names
            .iter()
            .zip(&params)
            .map(|(n, (src, _))| format!("{n} = {src}"))
            .collect();
        for r in &requires {
            text.push(format!("require({})", render(r, &names, &mut rng)));
        }
        let base: Vec<String> = names
            .iter()
            .zip(&params)
            .map(|(n, (_, values))| format!("{n} = {}", values[0]))
            .collect();
        text.push(format!("base({})", base.join(", ")));
        (text.join(", "), params, requires)
    };
    fuzz::run(
        "grammar-space",
        |rng| rng.next_u64().to_le_bytes().to_vec(),
        |input| {
            let (source, params, requires) = spec_of(input);
            // Brute force: every combination, declaration order, first parameter slowest.
            let mut points: Vec<Vec<Value>> = vec![Vec::new()];
            for (_, values) in &params {
                points = points
                    .into_iter()
                    .flat_map(|p| {
                        values.iter().map(move |v| {
                            let mut q = p.clone();
                            q.push(v.clone());
                            q
                        })
                    })
                    .collect();
            }
            let expected: Vec<Vec<Value>> = points
                .into_iter()
                .filter(|p| {
                    requires
                        .iter()
                        .all(|r| eval(r, p) == Some(Value::Bool(true)))
                })
                .collect();
            let parsed = gputune_grammar::parse_str(&source);
            let spec = match parsed {
                Ok(spec) => spec,
                // The grammar refuses a `require` that leaves nothing; so must the oracle.
                Err(e) if expected.is_empty() && !requires.is_empty() => {
                    return if e.message.contains("leave the space empty") {
                        Ok(())
                    } else {
                        Err(format!("`{source}`: {}", e.message))
                    };
                }
                Err(e) => return Err(format!("`{source}` does not parse: {}", e.message)),
            };
            for (p, (_, values)) in spec.params.iter().zip(&params) {
                if &p.values != values {
                    return Err(format!("`{source}`: {} has values {:?}", p.name, p.values));
                }
            }
            let got: Vec<Vec<Value>> = spec
                .space()
                .into_iter()
                .map(|p| p.values.into_iter().map(|(_, v)| v).collect())
                .collect();
            if got != expected {
                return Err(format!(
                    "`{source}`: the space has {} points, brute force {}",
                    got.len(),
                    expected.len()
                ));
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------
// Bench flags and `-a` axes.

const FLAGS: &[&str] = &[
    "--max-noise",
    "--min-time",
    "--min-samples",
    "--timeout",
    "--max-angle",
    "--min-r2",
    "--target-samples",
    "--criterion-param",
    "--throttle-threshold",
    "--no-batch",
    "--race",
    "--decide",
    "--batch-target-time",
    "--device",
    "--cpu",
    "--profile",
    "--disable-blocking-kernel",
    "--stopping-criterion",
    "--variant",
    "-b",
    "-a",
    "--list",
    "--json",
    "--jsonl",
    "--more-on-stdin",
    "--bench",
    "--",
    "-",
    "--unknown",
];
const FLAG_VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "0.5",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "-inf",
    "1e-320",
    "18446744073709551616",
    "stdrel",
    "entropy",
    "sample-count",
    "x=1",
    "x=NaN",
    "=",
    "a,b",
    "scale.ipt_8.tpb_128",
    "@",
    "Elements[pow2]=[16:28:4]",
    "",
    " ",
    "-b",
    "\u{0}",
    "T{ct}=f32",
];

#[test]
fn bench_flags_parse_or_refuse_and_round_trip() {
    fuzz::run(
        "bench-flags",
        |rng| {
            let argv: Vec<&str> = (0..rng.below(8))
                .map(|_| {
                    if rng.one_in(2) {
                        *rng.pick(FLAGS)
                    } else {
                        *rng.pick(FLAG_VALUES)
                    }
                })
                .collect();
            serde_json::to_vec(&argv).unwrap_or_default()
        },
        |input| {
            let Ok(argv) = serde_json::from_slice::<Vec<String>>(input) else {
                return Ok(());
            };
            let _ = BenchArgs::next_pass(&text(input));
            let Ok(args) = BenchArgs::from_flags(&argv) else {
                return Ok(());
            };
            let _ = args.measurement_settings();
            let _ = args.extra_params();
            if args.validate().is_err() {
                return Ok(());
            }
            // `to_args` promises the line that parses back into the same flags.
            let again = BenchArgs::from_flags(args.to_args())
                .map_err(|e| format!("{argv:?} → {:?} does not parse: {e}", args.to_args()))?;
            if again != args {
                return Err(format!(
                    "{argv:?} → {:?} parses differently",
                    args.to_args()
                ));
            }
            Ok(())
        },
    );
}

const AXIS_TOKENS: &[&str] = &[
    "[pow2]",
    "[",
    "]",
    ":",
    ",",
    "=",
    "{io}",
    "{ct}",
    "Elements",
    "T",
    "f32",
    "2^",
    "-",
    "0:0:0",
    "0:9223372036854775807:1",
    "1:1000000000:1",
    "62",
    "64",
    "1e9",
    "0x10",
];

#[test]
fn axis_overrides_parse_and_apply_or_refuse() {
    use gputune_runtime::axis::{Axis, AxisValues};
    use gputune_runtime::cli::{ApplyOverride, AxisOverride};
    let seeds: Vec<Vec<u8>> = [
        "Elements{io}[pow2]=[20,24,28]",
        "Elements[pow2]=[16:28:4]",
        "T{ct}=f32",
        "T=[f32,f64]",
        "N=[1:10:3]",
        "Mode=fast",
        "F=[0.5,1.5]",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    // One axis of every kind, as a bench declares them; the bench runner applies `-a` to
    // each axis that answers to its name with this same `apply`.
    let axes = [
        Axis {
            name: "N".into(),
            values: AxisValues::Int64(vec![1, 2]),
        },
        Axis {
            name: "Elements{io}".into(),
            values: AxisValues::Int64Pow2(vec![16, 20]),
        },
        Axis {
            name: "F".into(),
            values: AxisValues::Float64(vec![0.5]),
        },
        Axis {
            name: "Mode".into(),
            values: AxisValues::String(vec!["fast".into()]),
        },
        Axis {
            name: "T{ct}".into(),
            values: AxisValues::Type(vec!["f32".into(), "f64".into()]),
        },
    ];
    fuzz::run(
        "axis-override",
        |rng| mutated(rng, &seeds, AXIS_TOKENS, 4),
        |input| {
            let Ok(o) = AxisOverride::parse(&text(input)) else {
                return Ok(());
            };
            for axis in &axes {
                if let Ok(values) = o.apply(axis) {
                    if values.len() > gputune_runtime::cli::MAX_AXIS_VALUES {
                        return Err(format!("{} values for {}", values.len(), axis.name));
                    }
                }
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------
// What bench processes print, as cargo gputune reads it.

fn declared_axes() -> Vec<AxisDoc> {
    let list = fuzz::seeds("documents")
        .into_iter()
        .find_map(|d| serde_json::from_slice::<ListDoc>(&d).ok())
        .expect("tests/fuzz/seeds/documents holds a --list document");
    list.benchmarks.into_iter().flat_map(|b| b.axes).collect()
}

#[test]
fn jsonl_events_are_read_or_refused() {
    let seeds = fuzz::seeds("events");
    let declared = declared_axes();
    fuzz::run(
        "events",
        |rng| {
            let mut input = rng.pick(&seeds).clone();
            for _ in 0..=rng.below(4) {
                if rng.one_in(2) {
                    mutate_lines(rng, &mut input);
                } else {
                    mutate(
                        rng,
                        &mut input,
                        &["\"state\"", "\"variant\"", "null", "1e999"],
                        b"",
                    );
                }
            }
            input
        },
        |input| {
            let Ok(events) = cargo_gputune::measure::protocol::parse_events(input) else {
                return Ok(());
            };
            for e in events {
                if let Event::State { state, .. } = e {
                    let (key, weight) =
                        cargo_gputune::measure::runs::rt_workload(&state, &declared);
                    if weight.is_nan() {
                        return Err(format!("workload {key} has a NaN weight"));
                    }
                    let _ = cargo_gputune::measure::runs::state_status(&state);
                    let _ = state.summary("nv/cold/time/gpu/median");
                }
            }
            Ok(())
        },
    );
}

#[test]
fn protocol_documents_are_read_or_refused() {
    let seeds = fuzz::seeds("documents");
    let bin = PathBuf::from("bench");
    fuzz::run(
        "documents",
        |rng| {
            mutated(
                rng,
                &seeds,
                &["\"protocol\"", "7", "\"benchmarks\"", "\"devices\""],
                4,
            )
        },
        |input| {
            let stdout = text(input);
            let _ = cargo_gputune::measure::protocol::document(
                &bin,
                "--list",
                &stdout,
                |d: &ListDoc| d.protocol,
            );
            let _ = cargo_gputune::measure::protocol::document(
                &bin,
                "--devices",
                &stdout,
                |d: &DevicesDoc| d.protocol,
            )
            .map(|d| {
                d.devices
                    .iter()
                    .map(|x| (x.identity(), x.arch()))
                    .collect::<Vec<_>>()
            });
            let _ = serde_json::from_slice::<ResultsDoc>(input);
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------
// Kernel Tuner caches, T1 and T4 files.

const IMPORT_TOKENS: &[&str] = &[
    "\"time\"",
    "\"times\"",
    "\"cache\"",
    "\"tune_params\"",
    "\"tune_params_keys\"",
    "\"InvalidConfig\"",
    "\"CompilationFailedConfig\"",
    "\"RuntimeFailedConfig\"",
    "\"schema_version\"",
    "\"results\"",
    "\"configuration\"",
    "\"invalidity\"",
    "\"compile\"",
    "\"runtimes\"",
    "\"1.0.0\"",
    "\"0.0.1\"",
    "\"device_name\"",
    "1e20",
    "-0.0",
    "[[]]",
];

fn scratch(name: &str) -> PathBuf {
    // One folder per test process, shared by the targets (which run side by side): each
    // target's files carry its thread's name.
    let dir = std::env::temp_dir().join(format!("gputune-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!("{name}-{:?}", std::thread::current().id()).replace(['(', ')'], ""))
}

#[test]
fn community_files_import_or_are_refused() {
    let seeds = fuzz::seeds("import");
    let path = scratch("import.json");
    fuzz::run(
        "import",
        |rng| mutated(rng, &seeds, IMPORT_TOKENS, 5),
        |input| {
            std::fs::write(&path, input).map_err(|e| e.to_string())?;
            let Ok(file) = cargo_gputune::results::import::read(&path) else {
                return Ok(());
            };
            if let Ok(plan) = cargo_gputune::results::import::plan(vec![file], None) {
                for row in &plan.rows {
                    if row.samples.iter().any(|s| !s.is_finite()) {
                        return Err(format!("{}: a sample that is not finite", row.variant));
                    }
                }
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------
// A store with corrupt pages.

#[test]
fn a_corrupt_store_is_an_error_not_a_crash() {
    use cargo_gputune::results::store::Store;
    // A real store: the seed cache imported.
    let template = scratch("template.db");
    let _ = std::fs::remove_file(&template);
    {
        let cache = fuzz::seeds("import")
            .into_iter()
            .find(|s| s.starts_with(b"{\n\"device_name\""))
            .expect("the Kernel Tuner cache seed");
        let seed_path = scratch("seed-cache.json");
        std::fs::write(&seed_path, &cache).expect("writes");
        let file = cargo_gputune::results::import::read(&seed_path).expect("the seed imports");
        let plan = cargo_gputune::results::import::plan(vec![file], None).expect("plans");
        let store = Store::open(&template).expect("a new store");
        store.put_all(&plan.rows, &plan.spaces).expect("writes");
    }
    let clean = std::fs::read(&template).expect("the store file");
    assert!(clean.len() >= 4096, "a store of pages");
    let path = scratch("corrupt.db");
    fuzz::run(
        "store",
        |rng| {
            let mut bytes = clean.clone();
            let pages = bytes.len() / 4096;
            for _ in 0..=rng.below(4) {
                let page = rng.below(pages);
                // Mostly inside a page (a torn write), sometimes the header or a whole page.
                match rng.below(4) {
                    0 => {
                        let i = page * 4096;
                        let fill = rng.next_u64() as u8;
                        bytes[i..i + 4096].fill(fill);
                    }
                    1 => bytes[rng.below(100)] = rng.next_u64() as u8,
                    _ => {
                        let i = page * 4096 + rng.below(4096);
                        bytes[i] ^= 1 << rng.below(8);
                    }
                }
            }
            if rng.one_in(8) {
                bytes.truncate(rng.below(bytes.len()));
            }
            bytes
        },
        |input| {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
            std::fs::write(&path, input).map_err(|e| e.to_string())?;
            if let Ok(store) = Store::open_read_only(&path) {
                let _ = store.measurements();
                let _ = store.dated_measurements();
                let _ = store.spaces();
            }
            if let Ok(store) = Store::open(&path) {
                let _ = store.measurements().map(|rows| store.put(&rows));
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------
// gputune.toml.

const TOML_TOKENS: &[&str] = &[
    "version = 2",
    "version = 1",
    "[[",
    "]]",
    "[scale.\"*\".sm_90]",
    "size-axis",
    "size-from",
    "size-below",
    "measured-on",
    "\"Elements\"",
    "\"NVIDIA H200\"",
    "ipt",
    "tpb",
    "=",
    "\n",
    "18446744073709551615",
    "-1",
    "inf",
];

#[test]
fn gputune_toml_is_read_or_refused() {
    use gputune_protocol::gputune_toml::GputuneToml;
    let seeds = fuzz::seeds("gputune-toml");
    let spec = gputune_grammar::parse_str(
        "ipt = [1, 2, 4, 8], tpb = pow2(6..=10), base(ipt = 4, tpb = 256), size(Elements = n)",
    )
    .expect("a valid spec");
    fuzz::run(
        "gputune-toml",
        |rng| mutated(rng, &seeds, TOML_TOKENS, 5),
        |input| {
            let Ok(file) = GputuneToml::parse(&text(input)) else {
                return Ok(());
            };
            let _ = file.entries("scale", &spec);
            // What `apply` writes must read back as the same file.
            let again = GputuneToml::parse(&file.to_text())
                .map_err(|e| format!("its own text does not parse: {e}"))?;
            if again != file {
                return Err("its own text reads back differently".into());
            }
            Ok(())
        },
    );
}
