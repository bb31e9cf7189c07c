//! The applied policy of one tuned function, as the generated dispatch holds it, and the
//! choice it makes: a requested variant, else the entry of the running device's model, else
//! of its architecture, else base, at the call's sizes (one per `size(…)` axis) where the
//! entries are per size.

/// What the generated dispatch of one tuned function knows, as plain data.
#[derive(Debug)]
pub struct Table {
    /// The function's name (`scale`).
    pub function: &'static str,
    /// The label of each arm, in `match` order; `arms[0]` is `"base"`.
    pub arms: &'static [&'static str],
    /// Applied entries from `gputune.toml`: per workload, the specific workload's entries
    /// before those of `*` (the build helper writes them so).
    pub policy: &'static [Entry],
}

/// What an entry's device key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A device model (`NVIDIA H200`), matched against [`Device::model`].
    Model,
    /// An architecture (`sm_90`, `cpu`), matched against [`Device::arch`].
    Arch,
}

/// One applied entry: on the device `device` names, compile-time workload `workload` runs arm
/// `arm` at the sizes `sizes` holds.
#[derive(Debug)]
pub struct Entry {
    /// Index of the compile-time workload, as the generated code numbers them.
    pub workload: usize,
    /// What [`device`](Self::device) names.
    pub key: Key,
    /// A device model (`NVIDIA H200`) or an architecture (`sm_90`, `cpu`).
    pub device: &'static str,
    /// Per size axis of the function's `size(…)`, in its order, the first and last size it
    /// holds for (inclusive); empty: every size.
    pub sizes: &'static [(u64, u64)],
    /// Index into [`Table::arms`].
    pub arm: u32,
}

impl Entry {
    fn holds(&self, workload: usize, key: Key, device: &Device<'_>) -> bool {
        let name = match key {
            Key::Model => device.model,
            Key::Arch => device.arch,
        };
        self.workload == workload && self.key == key && self.device == name
    }

    fn covers(&self, sizes: &[u64]) -> bool {
        covers(self.sizes, sizes)
    }
}

/// Whether `sizes` (one per axis; a missing one reads as 0) is inside `ranges`.
fn covers(ranges: &[(u64, u64)], sizes: &[u64]) -> bool {
    ranges.iter().enumerate().all(|(i, &(first, last))| {
        let s = sizes.get(i).copied().unwrap_or(0);
        first <= s && s <= last
    })
}

/// The device whose entries apply: its model name and architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Device<'a> {
    /// `NVIDIA H200`, or a CPU's model name.
    pub model: &'a str,
    /// `sm_90`, or `cpu`.
    pub arch: &'a str,
}

/// The entries that apply to `workload` on `device`, in the order they are tried: the model's
/// (the workload's own, then `*`'s), then the architecture's. Only resolution calls this, once
/// per workload and process, so a vector costs nothing that matters.
fn candidates<'t>(table: &'t Table, workload: usize, device: &Device<'_>) -> Vec<&'t Entry> {
    [Key::Model, Key::Arch]
        .into_iter()
        .flat_map(|key| {
            table
                .policy
                .iter()
                .filter(move |e| e.holds(workload, key, device))
        })
        .collect()
}

/// The arm to run: the requested variant if any (`None` when it is not compiled in), else the
/// first entry for `workload` on `device` that covers `sizes` (`candidates`' order), else
/// base.
pub fn choose(
    table: &Table,
    workload: usize,
    requested: Option<&str>,
    device: &Device<'_>,
    sizes: &[u64],
) -> Option<u32> {
    if let Some(label) = requested {
        return table
            .arms
            .iter()
            .position(|a| *a == label)
            .map(|i| i as u32);
    }
    Some(
        candidates(table, workload, device)
            .into_iter()
            .find(|e| e.covers(sizes))
            .map_or(0, |e| e.arm),
    )
}

/// One rule of the production choice over sizes: where `sizes` holds (per axis, first and
/// last; empty: everywhere), `arm` runs, unless an earlier rule holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Per size axis, the first and last size (inclusive); empty: every size.
    pub sizes: Box<[(u64, u64)]>,
    /// The arm.
    pub arm: u32,
}

/// [`choose`] without a request, for every size at once: the entries that can still decide,
/// in order, the last one holding everywhere (base where no entry does). One rule means the
/// choice does not depend on the size.
pub fn rules(table: &Table, workload: usize, device: &Device<'_>) -> Vec<Rule> {
    let everywhere = |r: &[(u64, u64)]| {
        r.iter()
            .all(|&(first, last)| first == 0 && last == u64::MAX)
    };
    let mut out = Vec::new();
    for e in candidates(table, workload, device) {
        // Ranges that hold for every size are no condition.
        let all = everywhere(e.sizes);
        out.push(Rule {
            sizes: if all { Box::new([]) } else { e.sizes.into() },
            arm: e.arm,
        });
        if all {
            break;
        }
    }
    if out.last().map_or(true, |r| !r.sizes.is_empty()) {
        out.push(Rule {
            sizes: Box::new([]),
            arm: 0,
        });
    }
    // Rules just before the catch-all that run its arm change nothing.
    while out.len() > 1 && out[out.len() - 2].arm == out[out.len() - 1].arm {
        out.remove(out.len() - 2);
    }
    out
}

/// The arm of `sizes` among `rules` (from [`rules`]; the last one holds everywhere).
#[inline(always)]
pub fn rule_arm(rules: &[Rule], sizes: &[u64]) -> u32 {
    // A handful of rules (one per distinct shape or range): a scan.
    rules
        .iter()
        .find(|r| covers(&r.sizes, sizes))
        .map_or(0, |r| r.arm)
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn entry(workload: usize, key: Key, device: &'static str, arm: u32) -> Entry {
        sized(workload, key, device, &[], arm)
    }

    const fn sized(
        workload: usize,
        key: Key,
        device: &'static str,
        sizes: &'static [(u64, u64)],
        arm: u32,
    ) -> Entry {
        Entry {
            workload,
            key,
            device,
            sizes,
            arm,
        }
    }

    static TABLE: Table = Table {
        function: "scale",
        arms: &[
            "base",
            "ipt_8.tpb_128",
            "ipt_4.tpb_512",
            "ipt_1.tpb_64",
            "ipt_2.tpb_64",
        ],
        policy: &[
            entry(0, Key::Arch, "sm_90", 1),
            entry(1, Key::Arch, "sm_90", 2),
            entry(0, Key::Arch, "sm_80", 2),
            entry(0, Key::Model, "NVIDIA H200", 3),
            // Per size on an H100: below 1000, then 1000..=99_999; nothing above.
            sized(0, Key::Model, "NVIDIA H100", &[(0, 999)], 4),
            sized(0, Key::Model, "NVIDIA H100", &[(1000, 99_999)], 2),
            // Per shape (rows × columns) on a B200: 4096 × 1 and 1 × 4096 apart.
            sized(0, Key::Model, "NVIDIA B200", &[(4096, 4096), (1, 1)], 1),
            sized(0, Key::Model, "NVIDIA B200", &[(1, 1), (4096, 4096)], 2),
            sized(
                0,
                Key::Model,
                "NVIDIA B200",
                &[(2, u64::MAX), (0, u64::MAX)],
                3,
            ),
        ],
    };

    fn on(model: &'static str, arch: &'static str) -> Device<'static> {
        Device { model, arch }
    }

    #[test]
    fn the_model_beats_the_architecture_which_beats_base() {
        let choose = |w, d: Device<'_>| choose(&TABLE, w, None, &d, &[0]);
        assert_eq!(choose(0, on("NVIDIA H200", "sm_90")), Some(3), "model");
        assert_eq!(
            choose(0, on("NVIDIA GH200", "sm_90")),
            Some(1),
            "architecture"
        );
        assert_eq!(
            choose(1, on("NVIDIA H200", "sm_90")),
            Some(2),
            "no model entry here"
        );
        assert_eq!(choose(0, on("NVIDIA A100", "sm_80")), Some(2));
        // No entry for this workload on sm_80, none at all for sm_100 or an unknown workload.
        assert_eq!(choose(1, on("NVIDIA A100", "sm_80")), Some(0));
        assert_eq!(choose(0, on("NVIDIA B100", "sm_100")), Some(0));
        assert_eq!(choose(2, on("NVIDIA H200", "sm_90")), Some(0));
        // A model key never matches an architecture, nor the other way round.
        assert_eq!(choose(0, on("sm_80", "NVIDIA H200")), Some(0));
    }

    #[test]
    fn per_size_entries_hold_inside_their_ranges_and_fall_back_outside() {
        let h100 = on("NVIDIA H100", "sm_90");
        let at = |size| choose(&TABLE, 0, None, &h100, &[size]);
        assert_eq!(at(0), Some(4));
        assert_eq!(at(999), Some(4));
        assert_eq!(at(1000), Some(2));
        assert_eq!(at(99_999), Some(2));
        // Above the model's ranges, its architecture's entry.
        assert_eq!(at(100_000), Some(1));
        assert_eq!(at(u64::MAX), Some(1));
        let rules = rules(&TABLE, 0, &h100);
        assert_eq!(rules.len(), 3, "{rules:?}");
        for size in [0, 5, 999, 1000, 50_000, 99_999, 100_000, u64::MAX] {
            assert_eq!(Some(rule_arm(&rules, &[size])), at(size), "{size}");
        }
        // One rule when nothing depends on the size; base everywhere without entries.
        let one = |d| rules_of(d);
        assert_eq!(one(on("NVIDIA H200", "sm_90")), [(Vec::new(), 3)]);
        assert_eq!(one(on("x", "sm_70")), [(Vec::new(), 0)]);
    }

    fn rules_of(d: Device<'_>) -> Vec<(Vec<(u64, u64)>, u32)> {
        rules(&TABLE, 0, &d)
            .into_iter()
            .map(|r| (r.sizes.to_vec(), r.arm))
            .collect()
    }

    #[test]
    fn a_shape_of_several_axes_is_told_apart_on_each() {
        let b200 = on("NVIDIA B200", "sm_100");
        let at = |rows, cols| choose(&TABLE, 0, None, &b200, &[rows, cols]);
        assert_eq!(at(4096, 1), Some(1));
        assert_eq!(at(1, 4096), Some(2));
        assert_eq!(at(512, 512), Some(3));
        assert_eq!(at(1, 1), Some(0), "no entry holds 1 × 1: base");
        let rules = rules(&TABLE, 0, &b200);
        for (rows, cols) in [(4096, 1), (1, 4096), (512, 512), (1, 1), (1, 4095)] {
            assert_eq!(
                Some(rule_arm(&rules, &[rows, cols])),
                at(rows, cols),
                "{rows} × {cols}"
            );
        }
    }

    #[test]
    fn a_request_wins_over_the_policy_and_a_missing_one_is_reported() {
        let d = on("NVIDIA H200", "sm_90");
        assert_eq!(choose(&TABLE, 0, Some("ipt_1.tpb_64"), &d, &[0]), Some(3));
        assert_eq!(choose(&TABLE, 0, Some("base"), &d, &[0]), Some(0));
        assert_eq!(choose(&TABLE, 0, Some("ipt_2.tpb_32"), &d, &[0]), None);
    }
}
