//! The applied policy of one tuned function, as the generated dispatch holds it, and the
//! choice it makes: a requested variant, else the entry of the running device's model, else
//! of its architecture, else base, at the call's size where the entries are per size.

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
/// `arm` for sizes `first..=last` (all sizes: `0..=u64::MAX`).
#[derive(Debug)]
pub struct Entry {
    /// Index of the compile-time workload, as the generated code numbers them.
    pub workload: usize,
    /// What [`device`](Self::device) names.
    pub key: Key,
    /// A device model (`NVIDIA H200`) or an architecture (`sm_90`, `cpu`).
    pub device: &'static str,
    /// The first size it holds for.
    pub first: u64,
    /// The last size it holds for (inclusive).
    pub last: u64,
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

    fn covers(&self, size: u64) -> bool {
        self.first <= size && size <= self.last
    }
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
/// first entry for `workload` on `device` that covers `size` (`candidates`' order), else
/// base.
pub fn choose(
    table: &Table,
    workload: usize,
    requested: Option<&str>,
    device: &Device<'_>,
    size: u64,
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
            .find(|e| e.covers(size))
            .map_or(0, |e| e.arm),
    )
}

/// One piece of the production choice over sizes: sizes up to `last` (from the previous
/// piece's end) run `arm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// The last size of the piece (inclusive).
    pub last: u64,
    /// The arm.
    pub arm: u32,
}

/// [`choose`] without a request, for every size at once: the pieces cover `0..=u64::MAX` in
/// order, neighbours run different arms, and one piece means the choice does not depend on
/// the size. Where no entry covers a size, base runs there.
pub fn pieces(table: &Table, workload: usize, device: &Device<'_>) -> Vec<Piece> {
    let entries = candidates(table, workload, device);
    // Every size where some entry starts or stops holding: between two such points the
    // covering entries, and so the choice, stay the same.
    let mut starts: Vec<u64> = vec![0];
    for e in &entries {
        starts.push(e.first);
        if let Some(after) = e.last.checked_add(1) {
            starts.push(after);
        }
    }
    starts.sort_unstable();
    starts.dedup();
    let mut out: Vec<Piece> = Vec::new();
    for (i, &start) in starts.iter().enumerate() {
        let last = starts.get(i + 1).map_or(u64::MAX, |next| next - 1);
        let arm = entries
            .iter()
            .find(|e| e.covers(start))
            .map_or(0, |e| e.arm);
        match out.last_mut() {
            Some(p) if p.arm == arm => p.last = last,
            _ => out.push(Piece { last, arm }),
        }
    }
    out
}

/// The arm of `size` among `pieces` (from [`pieces`]; the last piece ends at `u64::MAX`).
#[inline(always)]
pub fn piece_arm(pieces: &[Piece], size: u64) -> u32 {
    // A handful of pieces (one per distinct winner): a scan beats a binary search.
    pieces.iter().find(|p| size <= p.last).map_or(0, |p| p.arm)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: (u64, u64) = (0, u64::MAX);

    const fn entry(workload: usize, key: Key, device: &'static str, arm: u32) -> Entry {
        sized(workload, key, device, ALL, arm)
    }

    const fn sized(
        workload: usize,
        key: Key,
        device: &'static str,
        (first, last): (u64, u64),
        arm: u32,
    ) -> Entry {
        Entry {
            workload,
            key,
            device,
            first,
            last,
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
            sized(0, Key::Model, "NVIDIA H100", (0, 999), 4),
            sized(0, Key::Model, "NVIDIA H100", (1000, 99_999), 2),
        ],
    };

    fn on(model: &'static str, arch: &'static str) -> Device<'static> {
        Device { model, arch }
    }

    #[test]
    fn the_model_beats_the_architecture_which_beats_base() {
        let choose = |w, d: Device<'_>| choose(&TABLE, w, None, &d, 0);
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
        assert_eq!(choose(0, on("NVIDIA B200", "sm_100")), Some(0));
        assert_eq!(choose(2, on("NVIDIA H200", "sm_90")), Some(0));
        // A model key never matches an architecture, nor the other way round.
        assert_eq!(choose(0, on("sm_80", "NVIDIA H200")), Some(0));
    }

    #[test]
    fn per_size_entries_hold_inside_their_ranges_and_fall_back_outside() {
        let h100 = on("NVIDIA H100", "sm_90");
        let at = |size| choose(&TABLE, 0, None, &h100, size);
        assert_eq!(at(0), Some(4));
        assert_eq!(at(999), Some(4));
        assert_eq!(at(1000), Some(2));
        assert_eq!(at(99_999), Some(2));
        // Above the model's ranges, its architecture's entry.
        assert_eq!(at(100_000), Some(1));
        assert_eq!(at(u64::MAX), Some(1));
        assert_eq!(
            pieces(&TABLE, 0, &h100),
            [
                Piece { last: 999, arm: 4 },
                Piece {
                    last: 99_999,
                    arm: 2
                },
                Piece {
                    last: u64::MAX,
                    arm: 1
                },
            ]
        );
        for size in [0, 5, 999, 1000, 50_000, 99_999, 100_000, u64::MAX] {
            assert_eq!(
                Some(piece_arm(&pieces(&TABLE, 0, &h100), size)),
                at(size),
                "{size}"
            );
        }
        // One piece when nothing depends on the size; base everywhere without entries.
        assert_eq!(
            pieces(&TABLE, 0, &on("NVIDIA H200", "sm_90")),
            [Piece {
                last: u64::MAX,
                arm: 3
            }]
        );
        assert_eq!(
            pieces(&TABLE, 0, &on("x", "sm_70")),
            [Piece {
                last: u64::MAX,
                arm: 0
            }]
        );
    }

    #[test]
    fn a_request_wins_over_the_policy_and_a_missing_one_is_reported() {
        let d = on("NVIDIA H200", "sm_90");
        assert_eq!(choose(&TABLE, 0, Some("ipt_1.tpb_64"), &d, 0), Some(3));
        assert_eq!(choose(&TABLE, 0, Some("base"), &d, 0), Some(0));
        assert_eq!(choose(&TABLE, 0, Some("ipt_2.tpb_32"), &d, 0), None);
    }
}
