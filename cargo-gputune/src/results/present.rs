//! How results read for people: times, noise, device names and the live line of a search,
//! in the words and units that `search`, `report`, `check` and the plots share.

use gputune_protocol::KernelRecord;

use gputune_protocol::Status;

use crate::results::score::Score;
use crate::results::store::Measurement;
use crate::results::{paired_timing, score_of, Group, Timing};

/// `v` with four significant digits for values from 1 to 9999, the range a unit puts times in.
pub fn four_digits(v: f64) -> String {
    let decimals = match v.abs() {
        a if a >= 1000.0 => 0,
        a if a >= 100.0 => 1,
        a if a >= 10.0 => 2,
        _ => 3,
    };
    format!("{v:.decimals$}")
}

/// A time in seconds with its unit and four significant digits: `129.6 us`, `1.234 ms`.
/// ASCII (`us`, not `µs`), so that tables line up in any terminal.
pub fn time(seconds: f64) -> String {
    let a = seconds.abs();
    let (unit, scale) = if a < 1e-6 {
        ("ns", 1e9)
    } else if a < 1e-3 {
        ("us", 1e6)
    } else if a < 1.0 {
        ("ms", 1e3)
    } else {
        ("s", 1.0)
    };
    format!("{} {unit}", four_digits(seconds * scale))
}

/// A relative noise (a fraction) as `±1.0 %`.
pub fn noise(fraction: f64) -> String {
    format!("±{:.1} %", fraction * 100.0)
}

/// A device identity (`NAME|ARCH|sms=N|bus=B|ecc=E`, see `Device::identity`) as people read
/// it: `NVIDIA H200 (sm_90, 132 SMs, ECC on)`, `AMD EPYC (cpu, 2 cores)`. Anything else is
/// returned as it is, with `arch` after it when given.
pub fn device(identity: &str, arch: &str) -> String {
    let fallback = || {
        if arch.is_empty() || identity.contains(arch) {
            identity.to_string()
        } else {
            format!("{identity} ({arch})")
        }
    };
    // From the right: a name may itself hold `|`.
    let mut parts = identity.rsplitn(5, '|');
    let (Some(ecc), Some(_bus), Some(sms), Some(id_arch), Some(name)) = (
        parts.next().and_then(|p| p.strip_prefix("ecc=")),
        parts.next().and_then(|p| p.strip_prefix("bus=")),
        parts.next().and_then(|p| p.strip_prefix("sms=")),
        parts.next(),
        parts.next(),
    ) else {
        return fallback();
    };
    let cpu = id_arch == "cpu";
    let mut facts = vec![id_arch.to_string()];
    if let Ok(n) = sms.parse::<u64>() {
        let unit = match (cpu, n == 1) {
            (true, true) => "core",
            (true, false) => "cores",
            (false, true) => "SM",
            (false, false) => "SMs",
        };
        facts.push(format!("{n} {unit}"));
    }
    match ecc {
        "true" => facts.push("ECC on".into()),
        "false" if !cpu => facts.push("ECC off".into()),
        _ => {}
    }
    format!("{name} ({})", facts.join(", "))
}

/// The model part of a device identity (`NVIDIA H200` of `NVIDIA H200|sm_90|sms=132|…`), as
/// `gputune.toml` model keys name it and production builds find it; an identity of another
/// form is its own model.
pub fn model(identity: &str) -> &str {
    let mut parts = identity.rsplitn(5, '|');
    let tail: Vec<&str> = parts.by_ref().take(4).collect();
    match (parts.next(), tail.as_slice()) {
        (Some(name), [ecc, bus, sms, _arch])
            if ecc.starts_with("ecc=") && bus.starts_with("bus=") && sms.starts_with("sms=") =>
        {
            name
        }
        _ => identity,
    }
}

/// A group's device as people read it: `NVIDIA H200 (sm_90, 132 SMs, ECC on)`.
pub fn device_name(g: &Group) -> String {
    device(&g.device, &g.arch)
}

/// How reports name a group: `pkg / bench.function [ct] on DEVICE`.
pub fn title(g: &Group) -> String {
    format!(
        "{} / {}.{} [{}] on {}",
        g.package,
        g.bench,
        g.function,
        g.ct_workload,
        device_name(g)
    )
}

/// One figure per kernel, in launch order, joined by `/`: `40`, `40/32`. Empty for no kernels.
fn per_kernel(kernels: &[KernelRecord], figure: impl Fn(&KernelRecord) -> u32) -> String {
    kernels
        .iter()
        .map(|k| figure(k).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

/// The registers per thread of each of a variant's kernels: `40`, or `40/32` for two.
pub fn registers(kernels: &[KernelRecord]) -> String {
    per_kernel(kernels, |k| k.registers)
}

/// The local memory per thread of each of a variant's kernels, in bytes (spills and local
/// arrays): `0/16`.
pub fn local_memory(kernels: &[KernelRecord]) -> String {
    per_kernel(kernels, |k| k.local_bytes)
}

/// `1 variant`, `3 variants`.
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// What a search prints after a variant's label when it was scored: the score first (the
/// number scripts read), then its median time against base's on the same workloads, its
/// noise, and the verdict: `1.0047×  129.6 us vs base 130.2 us  ±1.0 %  faster`.
pub fn live_score(score: &Score, times: Option<(Timing, Timing)>) -> String {
    let mut line = format!("{:.4}×", score.score);
    if let Some((variant, base)) = times {
        line.push_str(&format!(
            "  {} vs base {}",
            time(variant.time),
            time(base.time)
        ));
        if let Some(n) = variant.noise {
            line.push_str(&format!("  {}", noise(n)));
        }
    }
    line.push_str("  ");
    line.push_str(score.verdict().words());
    line
}

/// What a search prints after a variant's label when its rows arrive, and the score the
/// strategy sees (`None`: failed or unscored): its first failure with its message, else its
/// [`live_score`] against `base` (the control of its pass; empty where the rows carry it).
pub fn live_line(base: &[Measurement], rows: &[Measurement]) -> (Option<f64>, String) {
    if let Some(bad) = rows.iter().find(|r| r.status != Status::Ok) {
        let line = format!(
            "{:<8} {}",
            bad.status,
            bad.message.clone().unwrap_or_default()
        );
        return (None, line);
    }
    match score_of(base, rows) {
        Some(sc) => (Some(sc.score), live_score(&sc, paired_timing(base, rows))),
        None => (None, "unscored (base has no measurement)".into()),
    }
}

/// The lines of a terminal table: `header`, then `rows`, each column padded to its widest
/// cell and the columns two spaces apart, left-aligned where `left(column)` says so and
/// right-aligned elsewhere; trailing spaces trimmed.
pub fn aligned<R: AsRef<[String]>>(
    header: &[&str],
    rows: &[R],
    left: impl Fn(usize) -> bool,
) -> Vec<String> {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r.as_ref()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let cells: Vec<String> = cells
            .zip(&width)
            .enumerate()
            .map(|(i, (c, &w))| {
                if left(i) {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        cells.join("  ").trim_end().to_string()
    };
    std::iter::once(line(&mut header.iter().copied()))
        .chain(
            rows.iter()
                .map(|r| line(&mut r.as_ref().iter().map(String::as_str))),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_take_a_unit_and_four_digits() {
        assert_eq!(time(129.6e-6), "129.6 us");
        assert_eq!(time(1.2345e-3), "1.234 ms");
        assert_eq!(time(5e-8), "50.00 ns");
        assert_eq!(time(2.5), "2.500 s");
        assert_eq!(noise(0.0104), "±1.0 %");
        assert_eq!(four_digits(999.94), "999.9");
        assert_eq!(
            (count(1, "variant"), count(3, "variant")),
            ("1 variant".into(), "3 variants".into())
        );
    }

    #[test]
    fn kernels_read_one_figure_each_in_launch_order() {
        let k = |registers, local_bytes| KernelRecord {
            name: "k".into(),
            registers,
            local_bytes,
            shared_bytes: 0,
            options: Vec::new(),
        };
        assert_eq!(registers(&[k(40, 0)]), "40");
        assert_eq!(registers(&[k(40, 0), k(32, 16)]), "40/32");
        assert_eq!(local_memory(&[k(40, 0), k(32, 16)]), "0/16");
        assert_eq!(registers(&[]), "");
    }

    #[test]
    fn the_model_is_the_identity_s_name() {
        assert_eq!(
            model("NVIDIA H200|sm_90|sms=132|bus=6144|ecc=true"),
            "NVIDIA H200"
        );
        assert_eq!(
            model("AMD EPYC 7B13|cpu|sms=2|bus=null|ecc=null"),
            "AMD EPYC 7B13"
        );
        // A name holding `|` keeps it; another form is its own model.
        assert_eq!(model("A|B|sm_90|sms=1|bus=2|ecc=false"), "A|B");
        assert_eq!(model("CPU|cpu"), "CPU|cpu");
    }

    #[test]
    fn device_identities_read_as_names() {
        assert_eq!(
            device("NVIDIA H200|sm_90|sms=132|bus=6144|ecc=true", "sm_90"),
            "NVIDIA H200 (sm_90, 132 SMs, ECC on)"
        );
        assert_eq!(
            device("AMD EPYC|cpu|sms=2|bus=null|ecc=null", "cpu"),
            "AMD EPYC (cpu, 2 cores)"
        );
        assert_eq!(
            device("Some|GPU|sm_80|sms=1|bus=5120|ecc=false", "sm_80"),
            "Some|GPU (sm_80, 1 SM, ECC off)"
        );
        assert_eq!(
            device("X|sm_75|sms=null|bus=null|ecc=null", "sm_75"),
            "X (sm_75)"
        );
        // Not an identity: as it is, with the architecture.
        assert_eq!(
            device("NVIDIA H100 80GB HBM3", "sm_90"),
            "NVIDIA H100 80GB HBM3 (sm_90)"
        );
        assert_eq!(device("cpu box", ""), "cpu box");
    }

    #[test]
    fn the_live_line_leads_with_the_score_and_names_the_direction() {
        let score = |value: f64, significant: bool| Score {
            score: value,
            min: value,
            mean: value,
            max: value,
            significant,
            workloads: 1,
        };
        let t = |time: f64, noise: Option<f64>| Timing {
            time,
            noise,
            workloads: 1,
        };
        let line = live_score(
            &score(1.0047, true),
            Some((t(129.6e-6, Some(0.01)), t(130.2e-6, Some(0.02)))),
        );
        assert_eq!(line, "1.0047×  129.6 us vs base 130.2 us  ±1.0 %  faster");
        assert!(line
            .split_whitespace()
            .next()
            .is_some_and(|w| w.starts_with("1.0047")));
        let line = live_score(&score(0.74, true), None);
        assert_eq!(line, "0.7400×  slower");
        let line = live_score(&score(0.999, false), Some((t(1e-3, None), t(1e-3, None))));
        assert_eq!(line, "0.9990×  1.000 ms vs base 1.000 ms  within noise");
    }
}
