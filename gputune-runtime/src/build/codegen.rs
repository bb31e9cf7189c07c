//! The Rust source of one tuned function's dispatch, written to `OUT_DIR/gputune/NAME.rs`.
//!
//! The `#[tune]` macro turns the body into a local `macro_rules! __gputune_body` taking the
//! parameter constants, and includes this file as the function's body expression. The file
//! holds one arm per compiled-in point: base, the applied entries, and the selected
//! variants, each selected one gated by `#[cfg(gputune_variant = "function.label")]`.

use gputune_grammar::{Point, TuneSpec};

use super::gputune_toml::{AppliedPoint, KeyKind, ANY_WORKLOAD};
use super::scan::Found;

/// One arm of the dispatch.
#[derive(Debug, Clone, PartialEq)]
pub struct Arm {
    /// `base`, or the point's label.
    pub label: String,
    /// The constants' values.
    pub point: Point,
    /// `function.label` when a selection compiled it in (it is then cfg-gated).
    pub cfg: Option<String>,
}

/// An applied entry, by arm.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyEntry {
    /// The workload key as written in `gputune.toml`.
    pub workload: String,
    /// The device key: a model name or an architecture.
    pub device: String,
    /// What [`device`](Self::device) names.
    pub kind: KeyKind,
    /// The sizes it holds for: per axis of the function's `size(…)`, in its order, `(first,
    /// last)` inclusive; `None`: every size.
    pub sizes: Option<Vec<(u64, u64)>>,
    /// Index into the arms.
    pub arm: usize,
}

/// The dispatch of one function: its arms and applied entries, and what could not be told
/// apart at run time.
#[derive(Debug, Clone)]
pub struct Dispatch {
    /// Arm 0 is base.
    pub arms: Vec<Arm>,
    /// Applied entries in file order.
    pub policy: Vec<PolicyEntry>,
    /// Warnings for the build output.
    pub warnings: Vec<String>,
}

impl Dispatch {
    /// Base, then the `applied` points, then the `selected` ones. Applied entries naming the
    /// same point share one arm: only distinct winners are compiled in.
    pub fn new(f: &Found, applied: &[AppliedPoint], selected: &[Point]) -> Dispatch {
        let mut arms = vec![Arm {
            label: "base".into(),
            point: f.spec.base_point(),
            cfg: None,
        }];
        let mut policy = Vec::new();
        let base = f.spec.base_point();
        for a in applied {
            let (label, point) = (a.point.label(), &a.point);
            // An entry naming the base point (a size range where nothing beats base) runs
            // base's arm: one arm per distinct point.
            let found = if *point == base {
                Some(0)
            } else {
                arms.iter().position(|a| a.label == label)
            };
            let arm = match found {
                Some(i) => i,
                None => {
                    arms.push(Arm {
                        label,
                        point: point.clone(),
                        cfg: None,
                    });
                    arms.len() - 1
                }
            };
            policy.push(PolicyEntry {
                workload: a.workload.clone(),
                device: a.device.clone(),
                kind: a.kind,
                sizes: (!a.sizes.is_empty()).then(|| {
                    f.spec
                        .sizes
                        .iter()
                        .map(|axis| {
                            a.sizes
                                .iter()
                                .find(|r| r.axis == axis.axis)
                                .map_or((0, u64::MAX), |r| (r.first(), r.last()))
                        })
                        .collect()
                }),
                arm,
            });
        }
        for point in selected {
            let label = point.label();
            if !arms.iter().any(|a| a.label == label) {
                arms.push(Arm {
                    cfg: Some(format!("{}.{label}", f.name)),
                    label,
                    point: point.clone(),
                });
            }
        }
        Dispatch {
            arms,
            policy,
            warnings: Vec::new(),
        }
    }
}

/// The `const` items of `point`, as the body of `function` sees them: one per parameter, and
/// `TUNED` ([`TuneSpec::tuned_item_with`]) over the parameter table `table` (a path, or the
/// table itself: [`TuneSpec::params_table`]).
pub fn constants(function: &str, spec: &TuneSpec, point: &Point, table: &str) -> String {
    let values: Vec<&gputune_grammar::Value> = spec
        .params
        .iter()
        .filter_map(|p| point.get(&p.name))
        .collect();
    let tuned = spec.tuned_item_with(function, &values, table);
    let consts = spec
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let value = point
                .get(&p.name)
                .map(|v| v.rust_literal())
                .unwrap_or_default();
            format!(
                "#[allow(dead_code)] const {}: {} = {value};",
                p.const_name(),
                spec.const_type(i).rust()
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    format!("{consts} {tuned}")
}

/// The condition that tells workload `key` (`T=f32,N=4`) apart at run time, from the
/// function's generic parameters; `None` when no part of the key names one.
fn condition(f: &Found, key: &str, warnings: &mut Vec<String>) -> Option<String> {
    let mut parts = Vec::new();
    for pair in key.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, value)) = pair.split_once('=') else {
            warnings.push(format!(
                "gputune.toml: workload `{key}` of `{}`: `{pair}` is not `axis=value`",
                f.name
            ));
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if f.type_generics.iter().any(|g| g == name) {
            parts.push(format!(
                "::gputune_runtime::tuned::type_is::<{name}>({value:?})"
            ));
        } else if f.const_generics.iter().any(|g| g == name)
            && (value.parse::<i64>().is_ok() || value == "true" || value == "false")
        {
            parts.push(format!("({name} == {value})"));
        } else {
            warnings.push(format!(
                "gputune.toml: workload `{key}` of `{}`: `{name}` is not a generic parameter \
                 of the function, so production builds cannot tell its values apart",
                f.name
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join(" && "))
}

/// The source of `f`'s dispatch.
pub fn source(f: &Found, dispatch: &mut Dispatch) -> String {
    let header = format!(
        "// @generated by gputune-runtime's build helper for `{}`; do not edit.\n",
        f.name
    );
    let arm_body = |point: &Point, table: &str| {
        format!(
            "__gputune_body!($; {})",
            constants(&f.name, &f.spec, point, table)
        )
    };
    if dispatch.arms.len() == 1 {
        let base = arm_body(&dispatch.arms[0].point, &f.spec.params_table());
        return format!("{header}{base}\n");
    }
    // Every arm's `TUNED` shares one table of the parameters (names, base values): a variant
    // adds its values alone, so a batch of thousands of variants stays small.
    let base = arm_body(&dispatch.arms[0].point, PARAMS_TABLE);

    let mut workloads: Vec<&str> = Vec::new();
    for e in &dispatch.policy {
        if e.workload != ANY_WORKLOAD && !workloads.contains(&e.workload.as_str()) {
            workloads.push(&e.workload);
        }
    }
    let other = workloads.len();
    let mut select = String::new();
    for (i, key) in workloads.iter().enumerate() {
        let cond = condition(f, key, &mut dispatch.warnings).unwrap_or_else(|| "true".into());
        select.push_str(&format!("if {cond} {{ {i} }} else "));
    }
    select.push_str(&format!("{{ {other} }}"));

    // Specific workloads first, so they win over `*` entries for the same device key; the
    // run time tries model keys before architecture keys whatever their order here.
    let mut entries: Vec<(usize, &PolicyEntry)> = Vec::new();
    for e in dispatch
        .policy
        .iter()
        .filter(|e| e.workload != ANY_WORKLOAD)
    {
        let w = workloads
            .iter()
            .position(|k| *k == e.workload)
            .unwrap_or(other);
        entries.push((w, e));
    }
    for e in dispatch
        .policy
        .iter()
        .filter(|e| e.workload == ANY_WORKLOAD)
    {
        for w in 0..=other {
            entries.push((w, e));
        }
    }
    let sized = dispatch.policy.iter().any(|e| e.sizes.is_some());
    let policy: String = entries
        .iter()
        .map(|(w, e)| {
            let key = match e.kind {
                KeyKind::Model => "Model",
                KeyKind::Arch => "Arch",
            };
            let sizes: String = e
                .sizes
                .iter()
                .flatten()
                .map(|(first, last)| format!("({first}, {last}), "))
                .collect();
            format!(
                "::gputune_runtime::tuned::Entry {{ workload: {w}, key: \
                 ::gputune_runtime::tuned::Key::{key}, device: {device:?}, sizes: &[{sizes}], \
                 arm: {arm} }}, ",
                device = e.device,
                arm = e.arm,
            )
        })
        .collect();
    // A function with per-size entries reads its sizes (`size(Axis = expr, …)`, evaluated by
    // the macro before this code) on every call.
    let arm = if sized {
        "__GPUTUNE_CACHE.arm_at(&__GPUTUNE_TABLE, __gputune_workload, &__gputune_sizes)"
    } else {
        "__GPUTUNE_CACHE.arm(&__GPUTUNE_TABLE, __gputune_workload)"
    };
    let labels: String = dispatch
        .arms
        .iter()
        .map(|a| format!("{:?}, ", a.label))
        .collect();
    let mut arms = String::new();
    for (i, arm) in dispatch.arms.iter().enumerate().skip(1) {
        if let Some(cfg) = &arm.cfg {
            arms.push_str(&format!("        #[cfg(gputune_variant = {cfg:?})]\n"));
        }
        arms.push_str(&format!(
            "        {i} => {},\n",
            arm_body(&arm.point, PARAMS_TABLE)
        ));
    }
    format!(
        "{header}{{
    #[allow(dead_code)]
    const {PARAMS_TABLE}: &[(&str, &str, &str)] = {params};
    static __GPUTUNE_TABLE: ::gputune_runtime::tuned::Table = ::gputune_runtime::tuned::Table {{
        function: {name:?},
        arms: &[{labels}],
        policy: &[{policy}],
    }};
    static __GPUTUNE_CACHE: ::gputune_runtime::tuned::Cache<{slots}> = ::gputune_runtime::tuned::Cache::new();
    let __gputune_workload: usize = {select};
    match {arm} {{
{arms}        _ => {base},
    }}
}}
",
        name = f.name,
        slots = other + 1,
        params = f.spec.params_table(),
    )
}

/// The name of the parameter table a dispatch of several arms declares once.
const PARAMS_TABLE: &str = "__GPUTUNE_PARAMS";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::scan::scan_source;

    fn found() -> Found {
        scan_source(
            "src/lib.rs",
            "#[tune(ipt = [1, 2, 4], fast = [true, false], load = [ldg, ldca], base(ipt = 1, fast = false, load = ldg))]
             fn f<T>() {}",
        )
        .0
        .remove(0)
    }

    #[test]
    fn base_only_is_the_body_without_dispatch() {
        let f = found();
        let mut d = Dispatch::new(&f, &[], &[]);
        let src = source(&f, &mut d);
        assert!(
            src.contains(
                "__gputune_body!($; #[allow(dead_code)] const IPT: usize = 1; \
             #[allow(dead_code)] const FAST: bool = false; \
             #[allow(dead_code)] const LOAD: &str = \"ldg\"; \
             #[allow(dead_code)] const TUNED: ::gputune_runtime::tuned::Tuned = \
             ::gputune_runtime::tuned::Tuned::new(\"f\", &[(\"ipt\", \"IPT\", \"1\"), \
             (\"fast\", \"FAST\", \"0\"), (\"load\", \"LOAD\", \"ldg\")], \
             \"1\\u{1f}0\\u{1f}ldg\");)"
            ),
            "{src}"
        );
        assert!(!src.contains("match"));
    }

    fn applied(workload: &str, device: &str, point: &Point) -> AppliedPoint {
        AppliedPoint {
            workload: workload.into(),
            device: device.into(),
            kind: KeyKind::of(device),
            sizes: Vec::new(),
            point: point.clone(),
            measured_on: None,
        }
    }

    #[test]
    fn applied_and_selected_arms() {
        let f = found();
        let space = f.spec.space();
        let applied = vec![
            applied("T=f32", "sm_90", &space[3]),
            applied("*", "cpu", &space[0]),
        ];
        let selected = vec![space[3].clone(), space[5].clone()];
        let mut d = Dispatch::new(&f, &applied, &selected);
        let labels: Vec<&str> = d.arms.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "base",
                "ipt_1.fast_false.load_ldca",
                "ipt_1.fast_true.load_ldg",
                "ipt_2.fast_true.load_ldca"
            ]
        );
        assert_eq!(
            d.arms[3].cfg.as_deref(),
            Some("f.ipt_2.fast_true.load_ldca")
        );
        let src = source(&f, &mut d);
        assert!(
            src.contains("type_is::<T>(\"f32\") { 0 } else { 1 }"),
            "{src}"
        );
        assert!(src.contains("Cache<2>"));
        // One table of the parameters for the whole dispatch; each arm adds its values.
        assert_eq!(src.matches("(\"ipt\", \"IPT\", \"1\")").count(), 1, "{src}");
        assert_eq!(
            src.matches("Tuned::new(\"f\", __GPUTUNE_PARAMS, ").count(),
            4,
            "{src}"
        );
        let key = "::gputune_runtime::tuned::Key::Arch";
        let all = "sizes: &[]";
        assert!(
            src.contains(&format!(
                "Entry {{ workload: 0, key: {key}, device: \"sm_90\", {all}, arm: 1 }}, \
                 ::gputune_runtime::tuned::Entry {{ workload: 0, key: {key}, device: \"cpu\", {all}, arm: 2 }}, \
                 ::gputune_runtime::tuned::Entry {{ workload: 1, key: {key}, device: \"cpu\", {all}, arm: 2 }}"
            )),
            "{src}"
        );
        assert!(src.contains("__GPUTUNE_CACHE.arm(&__GPUTUNE_TABLE, __gputune_workload)"));
        assert!(src
            .contains("#[cfg(gputune_variant = \"f.ipt_2.fast_true.load_ldca\")]\n        3 => "));
        assert!(d.warnings.is_empty());
    }

    #[test]
    fn a_workload_axis_that_is_not_a_generic_is_a_warning() {
        let f = found();
        let applied = vec![applied("U=f64", "cpu", &f.spec.space()[1])];
        let mut d = Dispatch::new(&f, &applied, &[]);
        let src = source(&f, &mut d);
        assert!(src.contains("if true { 0 }"));
        assert!(d.warnings[0].contains("`U` is not a generic parameter"));
    }

    fn found_sized(sizes: &str) -> Found {
        scan_source(
            "src/lib.rs",
            &format!(
                "#[tune(ipt = [1, 2, 4], fast = [true, false], load = [ldg, ldca], base(ipt = 1, \
                 fast = false, load = ldg), size({sizes}))] fn f<T>(n: usize, m: usize) {{}}"
            ),
        )
        .0
        .remove(0)
    }

    #[test]
    fn a_shape_entry_holds_a_range_on_each_axis_in_the_size_s_order() {
        let f = found_sized("Rows = n, Cols = m");
        let space = f.spec.space();
        let r = |axis: &str, from, below| crate::build::gputune_toml::SizeRange {
            axis: axis.into(),
            from,
            below,
        };
        let mut wide = applied("*", "NVIDIA H200", &space[1]);
        // Written in another order than the function's; Rows left unconstrained.
        wide.sizes = vec![r("Cols", Some(4096), Some(4097))];
        let mut tall = applied("*", "NVIDIA H200", &space[2]);
        tall.sizes = vec![
            r("Cols", Some(1), Some(2)),
            r("Rows", Some(4096), Some(4097)),
        ];
        let mut d = Dispatch::new(&f, &[wide, tall], &[]);
        let src = source(&f, &mut d);
        assert!(
            src.contains(&format!(
                "sizes: &[(0, {}), (4096, 4096), ], arm: 1",
                u64::MAX
            )),
            "{src}"
        );
        assert!(
            src.contains("sizes: &[(4096, 4096), (1, 1), ], arm: "),
            "{src}"
        );
    }

    #[test]
    fn per_size_and_model_entries_share_arms_and_dispatch_on_the_size() {
        let f = found_sized("Elements = n");
        let space = f.spec.space();
        let range = |from, below| {
            vec![crate::build::gputune_toml::SizeRange {
                axis: "Elements".into(),
                from,
                below,
            }]
        };
        let mut small = applied("*", "NVIDIA H200", &space[1]);
        small.sizes = range(None, Some(4096));
        let mut large = applied("*", "NVIDIA H200", &space[3]);
        large.sizes = range(Some(4096), None);
        // The architecture's winner is the large sizes' point: one arm for both; an entry
        // naming the base point runs base's arm.
        let arch = applied("*", "sm_90", &space[3]);
        let on_cpu = applied("*", "cpu", &f.spec.base_point());
        let mut d = Dispatch::new(&f, &[small, large, arch, on_cpu], &[]);
        assert_eq!(d.arms.len(), 3, "base and two distinct winners");
        assert_eq!(d.policy[3].arm, 0);
        let src = source(&f, &mut d);
        assert!(
            src.contains(
                "key: ::gputune_runtime::tuned::Key::Model, device: \"NVIDIA H200\", sizes: \
                 &[(0, 4095), ], arm: 1 }"
            ),
            "{src}"
        );
        assert!(src.contains(&format!(
            "device: \"NVIDIA H200\", sizes: &[(4096, {}), ], arm: 2 }}",
            u64::MAX
        )));
        assert!(src.contains(
            "__GPUTUNE_CACHE.arm_at(&__GPUTUNE_TABLE, __gputune_workload, &__gputune_sizes)"
        ));
    }
}
