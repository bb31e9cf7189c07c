//! Plot file names: readable, safe on any file system, and distinct per exact key.

use gputune_protocol::hash::Fnv64;

use crate::results::Group;

/// `package.bench.function.ct[.rt].arch.HASH.kind.svg`: readable parts made safe for any file
/// system, and a hash of the exact key (device included) so that parts which sanitise alike, or
/// two devices of one architecture, never overwrite each other. Stable across runs because
/// the hash is FNV-1a ([`Fnv64`]), not std's randomly seeded hasher.
pub(super) fn file_name(g: &Group, rt: Option<&str>, kind: &str) -> String {
    let mut key = vec![
        g.package.as_str(),
        g.bench.as_str(),
        g.function.as_str(),
        g.device.as_str(),
        g.ct_workload.as_str(),
    ];
    key.extend(rt);
    let ct = if g.ct_workload == "*" {
        "any"
    } else {
        &g.ct_workload
    };
    let mut parts = vec![
        safe(&g.package),
        safe(&g.bench),
        safe(&g.function),
        safe(ct),
    ];
    parts.extend(rt.map(safe));
    parts.push(safe(&g.arch));
    let mut h = Fnv64::new();
    for k in &key {
        h.field(k.as_bytes());
    }
    let hash = h.finish();
    // Folded to 32 bits: plenty to tell one directory's plots apart, and the name stays short.
    parts.push(format!("{:08x}", (hash ^ (hash >> 32)) as u32));
    parts.push(kind.to_string());
    format!("{}.svg", parts.join("."))
}

/// ASCII letters, digits, `-` and `_`, at most 48 characters; the rest becomes `_`.
fn safe(part: &str) -> String {
    let mut s = String::new();
    for c in part.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        };
        if !(c == '_' && s.ends_with('_')) {
            s.push(c);
        }
    }
    let s: String = s.trim_matches('_').chars().take(48).collect();
    if s.is_empty() {
        "_".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::write;
    use super::*;

    #[test]
    fn file_names_are_safe_distinct_and_stable() {
        let (groups, specs) = two_param_group();
        let dir = temp_dir("names");
        let first = write(&dir, &groups, &specs, 5, &[]).expect("written");
        let again = write(&dir, &groups, &specs, 5, &[]).expect("written");
        assert_eq!(first.files, again.files);
        let names: Vec<String> = first
            .files
            .iter()
            .map(|p| {
                p.file_name()
                    .expect("a name")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(
            names[0],
            "kernels.scale.scale.T_f32.Elements_io_2_20.sm_90.2aac8b04.samples.svg"
        );
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(unique.len(), 3, "{names:?}");
        for n in &names {
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
                "{n}"
            );
        }
        // Another device of the same architecture gets its own files.
        let mut other = groups[0].clone();
        other.device = "NVIDIA H100 PCIe".into();
        assert_ne!(
            file_name(&groups[0], Some(RT_A), "samples"),
            file_name(&other, Some(RT_A), "samples")
        );
        assert_eq!(safe("*"), "_");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
