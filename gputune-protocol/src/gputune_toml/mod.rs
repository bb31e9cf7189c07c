//! `gputune.toml`: the applied winners, per tuned function, compile-time workload and device,
//! optionally per range of a problem size. `cargo gputune apply` writes it; people review and
//! commit it; the build helper compiles its entries into the production dispatch. The format
//! is documented in `docs/gputune-toml.md`:
//!
//! ```toml
//! version = 2
//!
//! [scale."T=f32"."NVIDIA H200"]     # a device model, as the store records it
//! ipt = 4
//! tpb = 192
//!
//! [scale."T=f32".sm_90]             # an architecture: the fallback for other models
//! measured-on = "NVIDIA H100 80GB HBM3"
//! ipt = 4
//! tpb = 576
//!
//! [[sum."*"."NVIDIA H200"]]         # one winner per range of the size axis
//! size-axis = "Elements"
//! size-below = 4194304
//! unroll = 1
//!
//! [[sum."*"."NVIDIA H200"]]
//! size-axis = "Elements"
//! size-from = 4194304
//! unroll = 4
//! ```
//!
//! A shape of several size axes (rows × columns) takes one `size-ranges` table per entry
//! instead ([`sizes`]). Version 1 files (architecture keys only, one winner per key) read
//! unchanged.

mod checks;
pub mod sizes;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use checks::AppliedPoint;

/// The file name, next to the package's `Cargo.toml`.
pub const FILE_NAME: &str = "gputune.toml";
/// The format version this code writes.
pub const VERSION: i64 = 2;
/// The versions this code reads.
pub const READS: [i64; 2] = [1, 2];
/// Set by `cargo gputune` in the environment of its builds: a stamp of the package's
/// `gputune.toml` (its contents' hash, or `none`). The build helper reruns when it changes,
/// so a file written by hand (not by `apply`, which touches `build.rs`) is read too: cargo only
/// watches the file while it exists.
pub const STAMP_ENV: &str = "GPUTUNE_TOML_STAMP";

/// The entry key naming the device model an architecture entry was measured on.
pub const MEASURED_ON: &str = "measured-on";
/// The entry key naming the runtime axis of a per-size entry.
pub const SIZE_AXIS: &str = "size-axis";
/// The entry key of the first size a per-size entry holds for (inclusive; default 0).
pub const SIZE_FROM: &str = "size-from";
/// The entry key of the size a per-size entry holds below (exclusive; default unbounded).
pub const SIZE_BELOW: &str = "size-below";
/// The entry key of a per-size entry's ranges over several axes (see [`sizes`]).
pub const SIZE_RANGES: &str = "size-ranges";

/// The [`STAMP_ENV`] value for a package whose `gputune.toml` holds `contents` (`None`: no
/// file).
pub fn stamp(contents: Option<&[u8]>) -> String {
    match contents {
        Some(bytes) => {
            let mut h = crate::hash::Fnv64::new();
            h.write(bytes);
            format!("{:016x}", h.finish())
        }
        None => "none".to_string(),
    }
}

/// The workload key of an entry that holds for every compile-time workload.
pub const ANY_WORKLOAD: &str = "*";

/// What an entry's device key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeyKind {
    /// A device model, as the store records it (`NVIDIA H200`, a CPU's model name).
    Model,
    /// An architecture: `sm_XY` (CUDA compute capability X.Y) or `cpu`.
    Arch,
}

impl KeyKind {
    /// The kind of a version 2 key: `cpu` and `sm_` followed by digits (and an optional
    /// letter, `sm_90a`) are architectures; anything else is a device model.
    pub fn of(key: &str) -> KeyKind {
        let arch = key == "cpu"
            || key.strip_prefix("sm_").is_some_and(|cc| {
                let digits = cc.trim_end_matches(|c: char| c.is_ascii_lowercase());
                !digits.is_empty()
                    && digits.len() + 1 >= cc.len()
                    && digits.chars().all(|c| c.is_ascii_digit())
            });
        if arch {
            KeyKind::Arch
        } else {
            KeyKind::Model
        }
    }
}

/// The range of the size axis a per-size entry holds for: `from..below`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeRange {
    /// The runtime axis (`Elements`), as the function's `size(…)` names it.
    pub axis: String,
    /// The first size it holds for; `None` is 0.
    pub from: Option<u64>,
    /// The size it holds below; `None` is unbounded.
    pub below: Option<u64>,
}

impl SizeRange {
    /// The first size held.
    pub fn first(&self) -> u64 {
        self.from.unwrap_or(0)
    }

    /// The last size held (inclusive): `u64::MAX` when unbounded.
    pub fn last(&self) -> u64 {
        self.below.map_or(u64::MAX, |b| b.saturating_sub(1))
    }

    /// Whether `size` is in the range.
    pub fn contains(&self, size: u64) -> bool {
        self.first() <= size && size <= self.last()
    }

    /// Whether two ranges share a size.
    pub fn overlaps(&self, other: &SizeRange) -> bool {
        self.first() <= other.last() && other.first() <= self.last()
    }

    /// `Elements 1024..4096`, `Elements ..4096`, `Elements 4096..`: how messages name it.
    pub fn describe(&self) -> String {
        let bound = |b: Option<u64>| b.map(|v| v.to_string()).unwrap_or_default();
        format!("{} {}..{}", self.axis, bound(self.from), bound(self.below))
    }
}

/// An entry's parameters: one key per parameter of the function.
pub type Params = toml::Table;

/// One applied winner: its parameters and, for a per-size entry, the sizes it holds for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Entry {
    /// One key per parameter of the function (checked against its `#[tune]` by
    /// [`GputuneToml::entries`]).
    pub params: Params,
    /// The sizes it holds for, one range per axis it constrains; empty: every size.
    pub sizes: Vec<SizeRange>,
    /// The model it was measured on (`measured-on`), where the key does not say (an
    /// architecture key).
    pub measured_on: Option<String>,
}

/// The entries of one key (`[function."workload".device]`): one winner, or one per size range.
pub type Entries = Vec<Entry>;

/// A parsed `gputune.toml`: function → workload → device key → entries.
#[derive(Debug, Clone, PartialEq)]
pub struct GputuneToml {
    /// The version the file was written in (a new file: [`VERSION`]). A version 1 file is
    /// written back as version 1 until an entry is set, which makes it version 2.
    pub version: i64,
    /// The entries, in key order.
    pub functions: BTreeMap<String, BTreeMap<String, BTreeMap<String, Entries>>>,
}

impl Default for GputuneToml {
    fn default() -> Self {
        GputuneToml {
            version: VERSION,
            functions: BTreeMap::new(),
        }
    }
}

/// What [`GputuneToml::lookup`] found: the entry, the key it is under and its neighbours
/// there (the other size ranges of a per-size entry).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found<'a> {
    /// The workload key (the asked one, or `*`).
    pub workload: &'a str,
    /// The device key (the model, or the architecture).
    pub device: &'a str,
    /// Every entry under the key.
    pub entries: &'a Entries,
    /// The entry that holds.
    pub entry: &'a Entry,
}

/// Why a `gputune.toml` cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{FILE_NAME}: {0}")]
pub struct TomlError(pub String);

/// How messages name an entry: `[scale."T=f32".sm_90]`.
pub fn entry_name(function: &str, workload: &str, device: &str) -> String {
    format!("[{}.{workload:?}.{}]", key(function), key(device))
}

impl GputuneToml {
    /// Parses the text of a `gputune.toml`.
    pub fn parse(text: &str) -> Result<GputuneToml, TomlError> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| TomlError(e.to_string().trim().to_string()))?;
        let version = match table.get("version") {
            Some(toml::Value::Integer(v)) if READS.contains(v) => *v,
            Some(other) => {
                return Err(TomlError(format!(
                    "version {other} is not supported; this gputune reads versions 1 and \
                     {VERSION}"
                )))
            }
            None => return Err(TomlError(format!("missing `version = {VERSION}`"))),
        };
        let mut out = GputuneToml {
            version,
            functions: BTreeMap::new(),
        };
        for (function, workloads) in table.iter().filter(|(k, _)| *k != "version") {
            let workloads = sub_table(workloads, function)?;
            let slot = out.functions.entry(function.clone()).or_default();
            for (workload, devices) in workloads {
                let devices = sub_table(devices, &format!("{function}.{workload:?}"))?;
                let slot = slot.entry(workload.clone()).or_default();
                for (device, value) in devices {
                    let at = entry_name(function, workload, device);
                    slot.insert(device.clone(), entries_of(version, value, &at)?);
                }
            }
        }
        // A table without entries (`[scale]`, `[scale."*"]`) holds nothing to apply, and
        // `to_text` writes none back: dropped here, so a file reads back as it was written
        // (found by the generated inputs, tests/fuzz/regressions/gputune-toml).
        for workloads in out.functions.values_mut() {
            workloads.retain(|_, devices| !devices.is_empty());
        }
        out.functions.retain(|_, workloads| !workloads.is_empty());
        Ok(out)
    }

    /// What a device key names in this file: in version 1 every key is an architecture.
    pub fn kind(&self, device: &str) -> KeyKind {
        if self.version == 1 {
            KeyKind::Arch
        } else {
            KeyKind::of(device)
        }
    }

    /// The entries of `function` / `workload` / `device`, if any.
    pub fn get(&self, function: &str, workload: &str, device: &str) -> Option<&Entries> {
        self.functions.get(function)?.get(workload)?.get(device)
    }

    /// Sets the entries of `function` / `workload` / `device` (one winner: one entry without a
    /// size range), replacing what was there.
    pub fn set_entries(&mut self, function: &str, workload: &str, device: &str, entries: Entries) {
        // What `apply` sets (model keys, measured-on, ranges) needs version 2; an architecture
        // key means the same in both.
        self.version = VERSION;
        self.functions
            .entry(function.to_string())
            .or_default()
            .entry(workload.to_string())
            .or_default()
            .insert(device.to_string(), entries);
    }

    /// Sets the single winner of `function` / `workload` / `device` to `point`, with the
    /// model it was `measured_on` (written for architecture keys only: a model key says it).
    pub fn set(
        &mut self,
        function: &str,
        workload: &str,
        device: &str,
        point: &gputune_grammar::Point,
        measured_on: Option<&str>,
    ) {
        let entry = Entry {
            params: params_of(point),
            sizes: Vec::new(),
            measured_on: measured_on
                .filter(|_| KeyKind::of(device) == KeyKind::Arch)
                .map(str::to_string),
        };
        self.set_entries(function, workload, device, vec![entry]);
    }

    /// The entry of `function` that a device of `model` and `arch` runs for compile-time
    /// workload `workload` at the sizes `size` gives per axis (`None`: a single winner, or
    /// the first range), as the production dispatch chooses it: the model's key, then the
    /// architecture's, each for the workload and then for `*`.
    pub fn lookup(
        &self,
        function: &str,
        workload: &str,
        model: &str,
        arch: &str,
        size: Option<&sizes::AxisValue<'_>>,
    ) -> Option<Found<'_>> {
        let workloads = self.functions.get(function)?;
        let order = [
            (workload, model, KeyKind::Model),
            (ANY_WORKLOAD, model, KeyKind::Model),
            (workload, arch, KeyKind::Arch),
            (ANY_WORKLOAD, arch, KeyKind::Arch),
        ];
        for (w, device, kind) in order {
            let Some((w, (device, entries))) = workloads
                .get_key_value(w)
                .and_then(|(w, d)| Some((w, d.get_key_value(device)?)))
            else {
                continue;
            };
            if self.kind(device) != kind {
                continue;
            }
            let found = entries.iter().find(|e| match size {
                Some(value) => sizes::holds(&e.sizes, value),
                None => true,
            });
            if let Some(entry) = found {
                return Some(Found {
                    workload: w,
                    device,
                    entries,
                    entry,
                });
            }
        }
        None
    }

    /// The file's text, entries in key order, in its [`version`](Self::version): parsing it
    /// gives this file back.
    pub fn to_text(&self) -> String {
        let mut text = if self.version == 1 {
            "# Applied gputune winners: written by `cargo gputune apply`, reviewed and committed.\n\
             # [function.\"workload\".arch] holds the parameters production builds use on that\n\
             # architecture (docs/gputune-toml.md).\nversion = 1\n"
                .to_string()
        } else {
            format!(
                "# Applied gputune winners: written by `cargo gputune apply`, reviewed and \
                 committed.\n\
                 # [function.\"workload\".device] holds the parameters production builds use on \
                 that\n\
                 # device model (or architecture: sm_XY, cpu); [[…]] entries hold one winner per\n\
                 # size range (docs/gputune-toml.md).\nversion = {VERSION}\n"
            )
        };
        for (function, workloads) in &self.functions {
            for (workload, devices) in workloads {
                for (device, entries) in devices {
                    let per_size =
                        entries.len() != 1 || entries.iter().any(|e| !e.sizes.is_empty());
                    for e in entries {
                        let (open, close) = if per_size { ("[[", "]]") } else { ("[", "]") };
                        text.push_str(&format!(
                            "\n{open}{}.{}.{}{close}\n",
                            key(function),
                            key(workload),
                            key(device)
                        ));
                        if let [r] = &e.sizes[..] {
                            text.push_str(&format!("{SIZE_AXIS} = {}\n", toml_string(&r.axis)));
                            if let Some(from) = r.from {
                                text.push_str(&format!("{SIZE_FROM} = {from}\n"));
                            }
                            if let Some(below) = r.below {
                                text.push_str(&format!("{SIZE_BELOW} = {below}\n"));
                            }
                        } else if !e.sizes.is_empty() {
                            let ranges = sizes::text(&e.sizes, key);
                            text.push_str(&format!("{SIZE_RANGES} = {ranges}\n"));
                        }
                        if let Some(m) = &e.measured_on {
                            text.push_str(&format!("{MEASURED_ON} = {}\n", toml_string(m)));
                        }
                        for (name, value) in &e.params {
                            text.push_str(&format!("{} = {value}\n", key(name)));
                        }
                    }
                }
            }
        }
        text
    }
}

/// A point's parameters as an entry's table.
pub fn params_of(point: &gputune_grammar::Point) -> toml::Table {
    point
        .values
        .iter()
        .map(|(n, v)| (n.clone(), to_toml(v)))
        .collect()
}

/// A bare key where TOML allows one, else a quoted one.
fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        toml_string(k)
    }
}

/// A TOML basic string on one line: `"`, `\\` and control characters escaped. (The toml
/// crate writes a string with a line break as a multi-line string, which a table header cannot
/// hold: found by the generated inputs, a device key with a line break.)
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn sub_table<'a>(value: &'a toml::Value, at: &str) -> Result<&'a toml::Table, TomlError> {
    value.as_table().ok_or_else(|| {
        TomlError(format!(
            "`{at}` must be a table ([function.\"workload\".device] with one key per parameter)"
        ))
    })
}

/// The entries at one device key: a table (one entry) or, in version 2, an array of tables
/// (one per size range).
fn entries_of(version: i64, value: &toml::Value, at: &str) -> Result<Entries, TomlError> {
    let bad = |m: String| TomlError(format!("{at}: {m}"));
    match value {
        toml::Value::Table(t) if version == 1 => {
            for (k, v) in t {
                parameter_value(k, v).map_err(bad)?;
            }
            Ok(vec![Entry {
                params: t.clone(),
                ..Entry::default()
            }])
        }
        toml::Value::Table(t) => Ok(vec![entry_of(t).map_err(bad)?]),
        toml::Value::Array(items) if version >= 2 => {
            if items.is_empty() {
                return Err(bad(
                    "an empty list: give one [[…]] table per size range, or none".into(),
                ));
            }
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let t = item.as_table().ok_or_else(|| {
                    bad(format!(
                        "item {} is not a table (write [[…]] per size range)",
                        i + 1
                    ))
                })?;
                let entry = entry_of(t).map_err(|m| bad(format!("item {}: {m}", i + 1)))?;
                if entry.sizes.is_empty() {
                    return Err(bad(format!(
                        "item {} has no `{SIZE_AXIS}` (or `{SIZE_RANGES}`): [[…]] entries hold \
                         one winner per size range (a single winner is a [{}] table)",
                        i + 1,
                        at.trim_matches(['[', ']'])
                    )));
                }
                out.push(entry);
            }
            checks::ranges(&out).map_err(bad)?;
            Ok(out)
        }
        _ => Err(TomlError(format!(
            "`{}` must be a table ([function.\"workload\".device] with one key per parameter{})",
            at.trim_matches(['[', ']']),
            if version >= 2 {
                ", or [[…]] tables, one per size range"
            } else {
                ""
            }
        ))),
    }
}

/// One version 2 table: its entry keys (those with a `-`, which no parameter name has) and
/// its parameters.
fn entry_of(t: &toml::Table) -> Result<Entry, String> {
    let mut entry = Entry::default();
    let (mut axis, mut from, mut below) = (None, None, None);
    for (k, v) in t {
        let size = |v: &toml::Value| match v {
            toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
            other => Err(format!("`{k}` = {other}: a size is a non-negative integer")),
        };
        let text = |v: &toml::Value| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("`{k}` = {v}: expected a string"))
        };
        match k.as_str() {
            MEASURED_ON => entry.measured_on = Some(text(v)?),
            SIZE_AXIS => axis = Some(text(v)?),
            SIZE_FROM => from = Some(size(v)?),
            SIZE_BELOW => below = Some(size(v)?),
            SIZE_RANGES => entry.sizes = sizes::parse(k, v)?,
            other if other.contains('-') => {
                return Err(format!(
                    "unknown key `{other}` (an entry holds `{MEASURED_ON}`, `{SIZE_AXIS}`, \
                     `{SIZE_FROM}`, `{SIZE_BELOW}`, `{SIZE_RANGES}` and one key per parameter)"
                ))
            }
            _ => {
                parameter_value(k, v)?;
                entry.params.insert(k.clone(), v.clone());
            }
        }
    }
    if axis.is_some() && !entry.sizes.is_empty() {
        return Err(format!(
            "both `{SIZE_AXIS}` and `{SIZE_RANGES}`: give one axis's range with the first, or \
             every axis's with the second"
        ));
    }
    match axis {
        Some(axis) => {
            if axis.trim().is_empty() {
                return Err(format!("`{SIZE_AXIS}` is empty: name the runtime axis"));
            }
            if let (Some(f), Some(b)) = (from, below) {
                if f >= b {
                    return Err(format!(
                        "`{SIZE_FROM} = {f}` is not below `{SIZE_BELOW} = {b}`: the range is empty"
                    ));
                }
            }
            if below == Some(0) {
                return Err(format!("`{SIZE_BELOW} = 0`: the range is empty"));
            }
            entry.sizes = vec![SizeRange { axis, from, below }];
        }
        None if from.is_some() || below.is_some() => {
            return Err(format!(
                "`{SIZE_FROM}`/`{SIZE_BELOW}` without `{SIZE_AXIS}`: name the axis the range is of"
            ))
        }
        None => {}
    }
    Ok(entry)
}

/// A parameter's value is an integer, a boolean or a string (an identifier's text): anything
/// else is no value any `#[tune]` parameter takes, whichever function the entry is of.
fn parameter_value(key: &str, v: &toml::Value) -> Result<(), String> {
    match v {
        toml::Value::Integer(_) | toml::Value::Boolean(_) | toml::Value::String(_) => Ok(()),
        other => Err(format!(
            "`{key}` = {other}: a parameter's value is an integer, a boolean or a string"
        )),
    }
}

fn to_toml(v: &gputune_grammar::Value) -> toml::Value {
    use gputune_grammar::Value;
    match v {
        Value::Int(i) => toml::Value::Integer(*i),
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Ident(s) | Value::Str(s) => toml::Value::String(s.clone()),
    }
}
