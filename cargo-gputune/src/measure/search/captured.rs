//! `search --captured DIR`: one search per captured tuned function, narrowed to the workloads
//! the application called it with (`GPUTUNE_CAPTURE=DIR`, [`gputune_protocol::capture`]).
//!
//! A function's captured types narrow its bench's type axes (`T{ct}=[f32,bf16]`, each type by
//! the last segment of its Rust path, as `type_instances!` names it) and its captured sizes
//! replace its size axes' values (`Elements{io}[pow2]=[12,20]` where every size is a power of
//! two, which power-of-two axes need; else the values themselves). Captured sizes need not be
//! values the bench declares: they are the application's; their `{io}` weight is 1.
//!
//! Those `-a` specs make a product (types × each size axis), a superset of what was captured:
//! (1, 4096), (4096, 1) and (1024, 14336) make 3 × 3 shapes. The bench runs only the captured
//! ones, listed in its `--workloads` (`T=f32 Rows=1 Cols=4096`, a line each); the others are
//! not measured, stored or reported. One search per function, whatever its workloads, so a
//! second search into the same store resumes the first and measures nothing again.

use gputune_protocol::capture::CaptureFile;

use super::Settings;

/// What one captured function's search is: its settings, and a line saying what it covers.
#[derive(Debug, Clone)]
pub struct CapturedSearch {
    /// The package and function.
    pub package: String,
    /// The function.
    pub function: String,
    /// The search's settings: `s` narrowed to the function and its workloads.
    pub settings: Settings,
    /// `-a` specs it adds, for the user.
    pub axes: Vec<String>,
    /// Distinct workloads captured: those its bench runs (`--workloads`).
    pub workloads: usize,
    /// The combinations of the `-a` values: the workloads the product would have.
    pub combinations: usize,
    /// Calls captured.
    pub calls: u64,
}

/// The last segment of a Rust type path, generics aside (`half::bf16::bf16` → `bf16`,
/// `my::Wrapper<f32>` → `Wrapper`).
pub fn short_type(name: &str) -> &str {
    let base = name.split('<').next().unwrap_or(name);
    base.rsplit("::").next().unwrap_or(base)
}

/// The `-a` spec that sets `axis` to `values`: exponents under `[pow2]` when every value is a
/// power of two (which a power-of-two axis requires and a plain one takes), else the values.
pub fn size_spec(axis: &str, values: &[u64]) -> String {
    if values.iter().all(|v| v.is_power_of_two()) {
        let exps: Vec<String> = values
            .iter()
            .map(|v| v.trailing_zeros().to_string())
            .collect();
        format!("{axis}[pow2]=[{}]", exps.join(","))
    } else {
        let vals: Vec<String> = values.iter().map(u64::to_string).collect();
        format!("{axis}=[{}]", vals.join(","))
    }
}

/// A captured workload as `--workloads` lists it: `T=f32 Rows=1 Cols=4096`, each type by
/// [`short_type`], as the `-a` of its type axis names it.
pub fn workload_line(w: &gputune_protocol::capture::Captured) -> String {
    w.types
        .iter()
        .map(|(p, t)| format!("{p}={}", short_type(t)))
        .chain(w.sizes.iter().map(|(a, v)| format!("{a}={v}")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// How one captured function narrows its bench: the `-a` specs of its captured types and
/// sizes, and the `--workloads` list of exactly the captured combinations.
#[derive(Debug, Clone, PartialEq)]
pub struct Narrowing {
    /// `-a` specs: each type axis, then each size axis, as captured.
    pub axes: Vec<String>,
    /// The size axes, whose values are the application's (need not be declared).
    pub free_axes: Vec<String>,
    /// The bench flags that list the captured workloads (`--workloads A;B`), none when the
    /// function was captured without types or sizes.
    pub bench_args: Vec<String>,
    /// Distinct workloads captured.
    pub workloads: usize,
    /// The combinations of the `-a` values.
    pub combinations: usize,
    /// Calls captured.
    pub calls: u64,
}

/// What capture `c` narrows its function's bench to.
pub fn narrowing(c: &CaptureFile) -> Narrowing {
    let mut axes = Vec::new();
    let mut combinations = 1usize;
    let mut type_params: Vec<&str> = Vec::new();
    let mut size_axes: Vec<&str> = Vec::new();
    for w in &c.workloads {
        for (p, _) in &w.types {
            if !type_params.contains(&p.as_str()) {
                type_params.push(p);
            }
        }
        for (a, _) in &w.sizes {
            if !size_axes.contains(&a.as_str()) {
                size_axes.push(a);
            }
        }
    }
    for p in &type_params {
        let mut names: Vec<&str> = Vec::new();
        for (q, t) in c.workloads.iter().flat_map(|w| &w.types) {
            if q == p && !names.contains(&short_type(t)) {
                names.push(short_type(t));
            }
        }
        combinations = combinations.saturating_mul(names.len());
        axes.push(format!("{p}=[{}]", names.join(",")));
    }
    for a in &size_axes {
        let mut values: Vec<u64> = c
            .workloads
            .iter()
            .flat_map(|w| &w.sizes)
            .filter(|(b, _)| b == a)
            .map(|(_, v)| *v)
            .collect();
        values.sort_unstable();
        values.dedup();
        combinations = combinations.saturating_mul(values.len());
        axes.push(size_spec(a, &values));
    }
    // Exactly the captured workloads of that product: the bench runs no other.
    let lines: Vec<String> = c.workloads.iter().map(workload_line).collect();
    let bench_args = if lines.iter().all(String::is_empty) {
        Vec::new()
    } else {
        vec!["--workloads".into(), lines.join(";")]
    };
    Narrowing {
        axes,
        free_axes: size_axes.iter().map(|a| a.to_string()).collect(),
        bench_args,
        workloads: c.workloads.len(),
        combinations,
        calls: c.workloads.iter().map(|w| w.count).sum(),
    }
}

/// One search per captured function of `captures` (of the `packages` given, all if none),
/// each `s` narrowed to it.
pub fn searches(
    captures: &[CaptureFile],
    s: &Settings,
    packages: &[String],
) -> Vec<CapturedSearch> {
    let mut out = Vec::new();
    for c in captures {
        if !packages.is_empty() && !packages.contains(&c.package) {
            continue;
        }
        let n = narrowing(c);
        let mut settings = s.clone();
        settings.regex = Some(format!("^{}$", regex::escape(&c.function)));
        settings.axes = n
            .axes
            .iter()
            .cloned()
            .chain(s.axes.iter().cloned())
            .collect();
        settings.free_axes = n.free_axes;
        settings.bench_args.extend(n.bench_args);
        out.push(CapturedSearch {
            package: c.package.clone(),
            function: c.function.clone(),
            settings,
            axes: n.axes,
            workloads: n.workloads,
            combinations: n.combinations,
            calls: n.calls,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gputune_protocol::capture::{Captured, CAPTURE_VERSION};

    #[test]
    fn types_are_named_as_benches_name_them_and_sizes_as_their_axes_take_them() {
        assert_eq!(short_type("f32"), "f32");
        assert_eq!(short_type("half::bf16::bf16"), "bf16");
        assert_eq!(short_type("app::ops::BF16"), "BF16");
        assert_eq!(short_type("app::Wrap<core::f32>"), "Wrap");
        assert_eq!(
            size_spec("Elements", &[1024, 1 << 20]),
            "Elements[pow2]=[10,20]"
        );
        assert_eq!(size_spec("Cols", &[768, 4096]), "Cols=[768,4096]");
    }

    #[test]
    fn shapes_are_searched_as_captured_not_as_their_axes_product() {
        let shape = |r: u64, c: u64| Captured {
            types: Vec::new(),
            sizes: vec![("Rows".into(), r), ("Cols".into(), c)],
            count: 1,
        };
        let captures = vec![CaptureFile {
            version: CAPTURE_VERSION,
            package: "app".into(),
            function: "norm".into(),
            workloads: vec![shape(1, 4096), shape(4096, 1), shape(1024, 14336)],
        }];
        let s = crate::measure::search::tests_support::settings();
        let f = &searches(&captures, &s, &[])[0];
        assert_eq!(f.axes, ["Rows[pow2]=[0,10,12]", "Cols=[1,4096,14336]"]);
        assert_eq!((f.workloads, f.combinations), (3, 9));
        assert_eq!(
            f.settings.bench_args,
            [
                "--workloads",
                "Rows=1 Cols=4096;Rows=4096 Cols=1;Rows=1024 Cols=14336"
            ]
        );
        // A function captured without types or sizes runs its one workload: no list.
        let bare = vec![CaptureFile {
            workloads: vec![Captured {
                types: Vec::new(),
                sizes: Vec::new(),
                count: 3,
            }],
            ..captures[0].clone()
        }];
        assert!(searches(&bare, &s, &[])[0].settings.bench_args.is_empty());
    }

    #[test]
    fn each_captured_function_is_one_search_narrowed_to_its_workloads() {
        let w = |t: &str, n: u64, count| Captured {
            types: vec![("T".into(), t.into())],
            sizes: vec![("Elements".into(), n)],
            count,
        };
        let captures = vec![
            CaptureFile {
                version: CAPTURE_VERSION,
                package: "app".into(),
                function: "scale".into(),
                workloads: vec![
                    w("f32", 4096, 3),
                    w("f32", 1 << 20, 1),
                    w("app::H", 4096, 2),
                ],
            },
            CaptureFile {
                version: CAPTURE_VERSION,
                package: "other".into(),
                function: "norm".into(),
                workloads: vec![],
            },
        ];
        let mut s = crate::measure::search::tests_support::settings();
        s.axes = vec!["Mode=a".into()];
        let found = searches(&captures, &s, &["app".to_string()]);
        assert_eq!(found.len(), 1, "only the packages asked");
        let f = &found[0];
        assert_eq!(f.axes, ["T=[f32,H]", "Elements[pow2]=[12,20]"]);
        assert_eq!(
            f.settings.axes,
            ["T=[f32,H]", "Elements[pow2]=[12,20]", "Mode=a"]
        );
        assert_eq!(f.settings.regex.as_deref(), Some("^scale$"));
        assert_eq!(f.settings.free_axes, ["Elements"]);
        assert_eq!((f.workloads, f.calls), (3, 6));
        // Three of the product's four: H was not called on 2^20 elements.
        assert_eq!(f.combinations, 4);
        assert_eq!(
            f.settings.bench_args,
            [
                "--workloads",
                "T=f32 Elements=4096;T=f32 Elements=1048576;T=H Elements=4096"
            ]
        );
        let args = crate::measure::search::measurement_args(&f.settings).expect("valid");
        let listed = args.listed_workloads().expect("parses").expect("listed");
        assert_eq!(listed.len(), 3);
        assert_eq!(listed[2].to_string(), "T=H Elements=4096");
        assert_eq!(
            searches(&captures, &s, &[]).len(),
            2,
            "every package without -p"
        );
    }
}
