//! `search --captured DIR`: one search per captured tuned function, narrowed to the workloads
//! the application called it with (`GPUTUNE_CAPTURE=DIR`, [`gputune_protocol::capture`]).
//!
//! A function's captured types narrow its bench's type axes (`T{ct}=[f32,bf16]`, each type by
//! the last segment of its Rust path, as `type_instances!` names it) and its captured sizes
//! replace its size axes' values (`Elements{io}[pow2]=[12,20]` where every size is a power of
//! two, which power-of-two axes need; else the values themselves). Captured sizes need not be
//! values the bench declares: they are the application's; their `{io}` weight is 1.

use gputune_protocol::capture::{CaptureFile, Captured};

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
    /// Distinct workloads and calls captured.
    pub workloads: usize,
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
        for line in lines(&c.workloads) {
            out.push(search_of(c, &line, s));
        }
    }
    out
}

/// A workload's place: each type parameter's type, then each size axis's value.
fn coordinates(w: &Captured) -> Vec<(String, String)> {
    w.types
        .iter()
        .map(|(p, t)| (p.clone(), short_type(t).to_string()))
        .chain(w.sizes.iter().map(|(a, v)| (a.clone(), v.to_string())))
        .collect()
}

/// The captured workloads as groups whose axes' product is exactly the group (a bench sets
/// each axis to a list, and runs their product): all of them at once where their product is
/// what was captured, else lines along one axis (every other axis fixed), along the axis that
/// makes the fewest. A rows × columns capture of (4096, 4096), (1024, 4096) and (4096, 14336)
/// is two lines, not the four shapes of {4096, 1024} × {4096, 14336}.
fn lines(workloads: &[Captured]) -> Vec<Vec<&Captured>> {
    let coords: Vec<Vec<(String, String)>> = workloads.iter().map(coordinates).collect();
    let width = coords.first().map_or(0, Vec::len);
    let distinct_on = |i: usize| {
        let mut values: Vec<&String> = coords
            .iter()
            .filter_map(|c| c.get(i).map(|(_, v)| v))
            .collect();
        values.sort();
        values.dedup();
        values.len()
    };
    let mut unique: Vec<&Vec<(String, String)>> = coords.iter().collect();
    unique.sort();
    unique.dedup();
    let product: usize = (0..width).map(distinct_on).product();
    let same_axes = coords
        .iter()
        .all(|c| c.len() == width && c.iter().zip(&coords[0]).all(|((a, _), (b, _))| a == b));
    if !same_axes || product == unique.len() {
        return vec![workloads.iter().collect()];
    }
    // Along axis `i`: keyed by every other coordinate, in first-seen order.
    let along = |i: usize| {
        let mut groups: Vec<(Vec<&(String, String)>, Vec<&Captured>)> = Vec::new();
        for (w, c) in workloads.iter().zip(&coords) {
            let key: Vec<&(String, String)> = c
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, x)| x)
                .collect();
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, members)) => members.push(w),
                None => groups.push((key, vec![w])),
            }
        }
        groups
            .into_iter()
            .map(|(_, members)| members)
            .collect::<Vec<_>>()
    };
    // On a tie, along the last axis: sizes, which a bench's axes list most of.
    (0..width)
        .rev()
        .map(along)
        .min_by_key(Vec::len)
        .unwrap_or_else(|| vec![workloads.iter().collect()])
}

/// The search of `workloads` (a group of `c`'s whose axes' product is itself).
fn search_of(c: &CaptureFile, workloads: &[&Captured], s: &Settings) -> CapturedSearch {
    let mut axes = Vec::new();
    let mut type_params: Vec<&str> = Vec::new();
    let mut size_axes: Vec<&str> = Vec::new();
    for w in workloads {
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
        for (q, t) in workloads.iter().flat_map(|w| &w.types) {
            if q == p && !names.contains(&short_type(t)) {
                names.push(short_type(t));
            }
        }
        axes.push(format!("{p}=[{}]", names.join(",")));
    }
    for a in &size_axes {
        let mut values: Vec<u64> = workloads
            .iter()
            .flat_map(|w| &w.sizes)
            .filter(|(b, _)| b == a)
            .map(|(_, v)| *v)
            .collect();
        values.sort_unstable();
        values.dedup();
        axes.push(size_spec(a, &values));
    }
    let mut settings = s.clone();
    settings.regex = Some(format!("^{}$", regex::escape(&c.function)));
    settings.axes = axes.iter().cloned().chain(s.axes.iter().cloned()).collect();
    settings.free_axes = size_axes.iter().map(|a| a.to_string()).collect();
    CapturedSearch {
        package: c.package.clone(),
        function: c.function.clone(),
        settings,
        axes,
        workloads: workloads.len(),
        calls: workloads.iter().map(|w| w.count).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gputune_protocol::capture::CAPTURE_VERSION;

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
        // f32 at 4096 and 2^20, H at 4096 alone: not {f32, H} × {4096, 2^20}, but two lines.
        assert_eq!(found.len(), 2, "only the packages asked");
        let f = &found[0];
        assert_eq!(f.axes, ["T=[f32]", "Elements[pow2]=[12,20]"]);
        assert_eq!(
            f.settings.axes,
            ["T=[f32]", "Elements[pow2]=[12,20]", "Mode=a"]
        );
        assert_eq!(f.settings.regex.as_deref(), Some("^scale$"));
        assert_eq!(f.settings.free_axes, ["Elements"]);
        assert_eq!((f.workloads, f.calls), (2, 4));
        assert_eq!(found[1].axes, ["T=[H]", "Elements[pow2]=[12]"]);
        assert_eq!(
            searches(&captures, &s, &[]).len(),
            3,
            "every package without -p"
        );
    }

    #[test]
    fn shapes_are_searched_exactly_as_captured_not_as_their_axes_product() {
        let shape = |rows: u64, cols: u64| Captured {
            types: vec![("Q".into(), "app::Q4K".into())],
            sizes: vec![
                ("Rows".into(), rows),
                ("Cols".into(), cols),
                ("Batch".into(), 1),
            ],
            count: 2,
        };
        let file = |workloads| CaptureFile {
            version: CAPTURE_VERSION,
            package: "app".into(),
            function: "mmvq".into(),
            workloads,
        };
        let s = crate::measure::search::tests_support::settings();
        // Llama's matrices: four heights at 4096 columns, and 4096 × 14336.
        let llama = file(vec![
            shape(4096, 4096),
            shape(1024, 4096),
            shape(14336, 4096),
            shape(4096, 14336),
            shape(128256, 4096),
        ]);
        let axes: Vec<Vec<String>> = searches(&[llama], &s, &[])
            .into_iter()
            .map(|c| c.axes)
            .collect();
        assert_eq!(
            axes,
            [
                vec![
                    "Q=[Q4K]",
                    "Rows=[1024,4096,14336,128256]",
                    "Cols[pow2]=[12]",
                    "Batch[pow2]=[0]"
                ],
                vec![
                    "Q=[Q4K]",
                    "Rows[pow2]=[12]",
                    "Cols=[14336]",
                    "Batch[pow2]=[0]"
                ],
            ]
        );
        // A full product stays one search.
        let square = file(vec![shape(1, 1), shape(1, 2), shape(2, 1), shape(2, 2)]);
        assert_eq!(searches(&[square], &s, &[]).len(), 1);
    }
}
