//! How times and energies read, the same in a bench's table and in `cargo gputune`'s reports.

/// `1.234 ms`-style durations.
pub fn format_duration(seconds: f64) -> String {
    let a = seconds.abs();
    if !a.is_finite() {
        "n/a".into()
    } else if a >= 1.0 {
        format!("{seconds:.3} s")
    } else if a >= 1e-3 {
        format!("{:.3} ms", seconds * 1e3)
    } else if a >= 1e-6 {
        format!("{:.3} us", seconds * 1e6)
    } else {
        format!("{:.3} ns", seconds * 1e9)
    }
}

/// `1.234 mJ`-style energies (joules in).
pub fn format_energy(joules: f64) -> String {
    let a = joules.abs();
    if !a.is_finite() {
        "n/a".into()
    } else if a >= 1.0 {
        format!("{joules:.3} J")
    } else if a >= 1e-3 {
        format!("{:.3} mJ", joules * 1e3)
    } else if a >= 1e-6 {
        format!("{:.3} uJ", joules * 1e6)
    } else {
        format!("{:.3} nJ", joules * 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(format_duration(1.5), "1.500 s");
        assert_eq!(format_duration(0.0025), "2.500 ms");
        assert_eq!(format_duration(12.5e-6), "12.500 us");
        assert_eq!(format_duration(3e-9), "3.000 ns");
        assert_eq!(format_duration(f64::NAN), "n/a");
    }

    #[test]
    fn energies_pick_a_readable_unit() {
        assert_eq!(format_energy(2.0), "2.000 J");
        assert_eq!(format_energy(0.0125), "12.500 mJ");
        assert_eq!(format_energy(4e-5), "40.000 uJ");
        assert_eq!(format_energy(f64::INFINITY), "n/a");
    }
}
