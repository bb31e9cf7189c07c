//! `gputune.toml`: the applied winners, per tuned function, compile-time workload and device
//! architecture. `cargo gputune apply` writes it; people review and commit it; the build
//! helper compiles its entries into the production dispatch. The format is documented in
//! `docs/gputune-toml.md`:
//!
//! ```toml
//! version = 1
//!
//! [scale."T=f32".sm_90]
//! ipt = 8
//! tpb = 128
//! ```

use std::collections::BTreeMap;

use gputune_grammar::{Point, TuneSpec, Value};

/// The file name, next to the package's `Cargo.toml`.
pub const FILE_NAME: &str = "gputune.toml";
/// The format version this code reads and writes.
pub const VERSION: i64 = 1;
/// Set by `cargo gputune` in the environment of its builds: a stamp of the package's
/// `gputune.toml` (its contents' hash, or `none`). The build helper reruns when it changes,
/// so a file written by hand (not by `apply`, which touches `build.rs`) is read too: cargo only
/// watches the file while it exists.
pub const STAMP_ENV: &str = "GPUTUNE_TOML_STAMP";

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

/// A parsed `gputune.toml`: function → workload → architecture → parameter values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GputuneToml {
    /// The entries, in key order.
    pub functions: BTreeMap<String, BTreeMap<String, BTreeMap<String, toml::Table>>>,
}

/// Why a `gputune.toml` cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{FILE_NAME}: {0}")]
pub struct TomlError(pub String);

impl GputuneToml {
    /// Parses the text of a `gputune.toml`.
    pub fn parse(text: &str) -> Result<GputuneToml, TomlError> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| TomlError(e.to_string().trim().to_string()))?;
        match table.get("version") {
            Some(toml::Value::Integer(VERSION)) => {}
            Some(other) => {
                return Err(TomlError(format!(
                    "version {other} is not supported; this gputune reads version {VERSION}"
                )))
            }
            None => return Err(TomlError(format!("missing `version = {VERSION}`"))),
        }
        let mut out = GputuneToml::default();
        for (function, workloads) in table.iter().filter(|(k, _)| *k != "version") {
            let workloads = sub_table(workloads, function)?;
            let slot = out.functions.entry(function.clone()).or_default();
            for (workload, archs) in workloads {
                let where_ = format!("{function}.\"{workload}\"");
                let archs = sub_table(archs, &where_)?;
                let slot = slot.entry(workload.clone()).or_default();
                for (arch, params) in archs {
                    let params = sub_table(params, &format!("{where_}.{arch}"))?;
                    slot.insert(arch.clone(), params.clone());
                }
            }
        }
        Ok(out)
    }

    /// The entries of `function` as points of `spec`, checked: `(workload, arch, point)`.
    pub fn points(
        &self,
        function: &str,
        spec: &TuneSpec,
    ) -> Result<Vec<(String, String, Point)>, TomlError> {
        let mut out = Vec::new();
        let Some(workloads) = self.functions.get(function) else {
            return Ok(out);
        };
        for (workload, archs) in workloads {
            for (arch, params) in archs {
                let at = format!("[{function}.\"{workload}\".{arch}]");
                let point = point_of(spec, params).map_err(|m| TomlError(format!("{at}: {m}")))?;
                out.push((workload.clone(), arch.clone(), point));
            }
        }
        Ok(out)
    }

    /// Sets the entry of `function` / `workload` / `arch` to `point`.
    pub fn set(&mut self, function: &str, workload: &str, arch: &str, point: &Point) {
        let params = point
            .values
            .iter()
            .map(|(n, v)| (n.clone(), to_toml(v)))
            .collect();
        self.functions
            .entry(function.to_string())
            .or_default()
            .entry(workload.to_string())
            .or_default()
            .insert(arch.to_string(), params);
    }

    /// The file's text, entries in key order.
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "# Applied gputune winners: written by `cargo gputune apply`, reviewed and committed.\n\
             # [function.\"workload\".arch] holds the parameters production builds use on that\n\
             # architecture (docs/gputune-toml.md).\nversion = {VERSION}\n"
        );
        for (function, workloads) in &self.functions {
            for (workload, archs) in workloads {
                for (arch, params) in archs {
                    text.push_str(&format!(
                        "\n[{}.{}.{}]\n",
                        key(function),
                        key(workload),
                        key(arch)
                    ));
                    for (name, value) in params {
                        text.push_str(&format!("{} = {value}\n", key(name)));
                    }
                }
            }
        }
        text
    }
}

/// A bare key where TOML allows one, else a quoted one.
fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}

fn sub_table<'a>(value: &'a toml::Value, at: &str) -> Result<&'a toml::Table, TomlError> {
    value.as_table().ok_or_else(|| {
        TomlError(format!(
            "`{at}` must be a table ([function.\"workload\".arch] with one key per parameter)"
        ))
    })
}

fn to_toml(v: &Value) -> toml::Value {
    match v {
        Value::Int(i) => toml::Value::Integer(*i),
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Ident(s) | Value::Str(s) => toml::Value::String(s.clone()),
    }
}

/// The point that `params` names, every parameter present and of the right kind.
fn point_of(spec: &TuneSpec, params: &toml::Table) -> Result<Point, String> {
    let names: Vec<&str> = spec.params.iter().map(|p| p.name.as_str()).collect();
    if let Some(unknown) = params.keys().find(|k| !names.contains(&k.as_str())) {
        return Err(format!(
            "`{unknown}` is not a parameter; parameters: {}",
            names.join(", ")
        ));
    }
    let mut values = Vec::new();
    for (p, base) in spec.params.iter().zip(&spec.base) {
        let v = params
            .get(&p.name)
            .ok_or_else(|| format!("missing `{}`", p.name))?;
        let value = match (base, v) {
            (Value::Int(_), toml::Value::Integer(i)) => Value::Int(*i),
            (Value::Bool(_), toml::Value::Boolean(b)) => Value::Bool(*b),
            (Value::Ident(_), toml::Value::String(s)) => Value::Ident(s.clone()),
            (Value::Str(_), toml::Value::String(s)) => Value::Str(s.clone()),
            (base, other) => {
                return Err(format!(
                    "`{name}` = {other}, but `{name}` takes {} values",
                    base.kind(),
                    name = p.name,
                ))
            }
        };
        values.push((p.name.clone(), value));
    }
    Ok(Point { values })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> TuneSpec {
        gputune_grammar::parse_str("ipt = [1, 2, 4, 8], tpb = pow2(6..=8), base(ipt = 1, tpb = 64)")
            .expect("valid")
    }

    #[test]
    fn round_trips_and_checks_entries() {
        let text = "version = 1\n[scale.\"T=f32\".sm_90]\nipt = 8\ntpb = 128\n[scale.\"*\".cpu]\nipt = 2\ntpb = 64\n";
        let file = GputuneToml::parse(text).expect("valid");
        let points = file.points("scale", &spec()).expect("valid");
        let labels: Vec<String> = points
            .iter()
            .map(|(w, a, p)| format!("{w}/{a}/{}", p.label()))
            .collect();
        assert_eq!(labels, ["*/cpu/ipt_2.tpb_64", "T=f32/sm_90/ipt_8.tpb_128"]);
        let again = GputuneToml::parse(&file.to_text()).expect("own output parses");
        assert_eq!(again, file);
        assert!(file.points("other", &spec()).expect("none").is_empty());
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let err = |t: &str| {
            GputuneToml::parse(t)
                .and_then(|f| f.points("scale", &spec()))
                .expect_err(t)
                .to_string()
        };
        assert!(err("version = 2").contains("version 2 is not supported"));
        assert!(err("[scale]").contains("missing `version = 1`"));
        assert!(err("version = 1\n[scale.\"*\".cpu]\nipt = 8\n").contains("missing `tpb`"));
        assert!(
            err("version = 1\n[scale.\"*\".cpu]\nipt = true\ntpb = 64\n")
                .contains("`ipt` = true, but `ipt` takes integer values")
        );
        assert!(
            err("version = 1\n[scale.\"*\".cpu]\nipt = 1\ntpb = 64\nx = 1\n")
                .contains("`x` is not a parameter")
        );
        assert!(err("version = 1\nscale = 3\n").contains("must be a table"));
        assert!(err("version = 1\n[scale").starts_with("gputune.toml: "));
    }

    #[test]
    fn setting_keeps_other_entries() {
        let mut file = GputuneToml::parse("version = 1\n[scale.\"*\".sm_80]\nipt = 2\ntpb = 64\n")
            .expect("valid");
        let point = spec().space()[5].clone();
        file.set("scale", "*", "sm_90", &point);
        let points = file.points("scale", &spec()).expect("valid");
        assert_eq!(points.len(), 2);
    }
}
