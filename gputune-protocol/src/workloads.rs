//! `--workloads`: the runtime workloads a bench runs, out of the product of its axes.
//!
//! `-a` gives each axis a list of values, and a bench runs their product; an application calls
//! a function on some points of that product only (1 × 4096 and 4096 × 1, not 4096 × 4096).
//! A workload names such a point: `Axis=value` pairs separated by white space
//! (`T=f32 Rows=1 Cols=4096`), each axis by its plain name (`Elements` for `Elements{io}`; the
//! full name works too), an integer as a number (`4096`, or `2^12`), a type by its name as the
//! type axis lists it. A state runs when some listed workload agrees with it on every axis the
//! workload names; axes it does not name take any value.

use crate::flags::FlagError;

/// One listed workload: its `Axis=value` pairs, in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// `(axis, value)` as written.
    pub pairs: Vec<(String, String)>,
}

impl Workload {
    /// Parses `Rows=1 Cols=4096`. Every pair needs a name and a value; an axis named twice is
    /// an error. An empty text is no workload (`None`).
    pub fn parse(text: &str) -> Result<Option<Workload>, FlagError> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for pair in text.split_whitespace() {
            let bad = || {
                FlagError(format!(
                    "--workloads: `{pair}` in `{}` is not Axis=value (a workload is \
                     `Rows=1 Cols=4096`)",
                    text.trim()
                ))
            };
            let (name, value) = pair.split_once('=').ok_or_else(bad)?;
            if name.is_empty() || value.is_empty() {
                return Err(bad());
            }
            if pairs.iter().any(|(n, _)| plain_name(n) == plain_name(name)) {
                return Err(FlagError(format!(
                    "--workloads: `{}` names axis `{}` twice",
                    text.trim(),
                    plain_name(name)
                )));
            }
            pairs.push((name.to_string(), value.to_string()));
        }
        Ok((!pairs.is_empty()).then_some(Workload { pairs }))
    }

    /// The value given to the axis whose plain name is `axis`, if any.
    pub fn value_of(&self, axis: &str) -> Option<&str> {
        let axis = plain_name(axis);
        self.pairs
            .iter()
            .find(|(n, _)| plain_name(n) == axis)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this workload gives axis `axis` (full or plain name) the value `value`, or
    /// gives it none: a compile-time workload `T=f32` has listed workloads when one of them
    /// agrees with it on `T`.
    pub fn agrees(&self, axis: &str, value: &str) -> bool {
        self.value_of(axis)
            .map_or(true, |written| same_value(written, value))
    }

    /// Whether this workload agrees with a point whose axes have the values `point` (full or
    /// plain names, values as a state's name writes them): every axis it names is in `point`
    /// with the same value.
    pub fn admits<'a>(&self, point: impl IntoIterator<Item = (&'a str, &'a str)> + Clone) -> bool {
        self.pairs.iter().all(|(name, written)| {
            point
                .clone()
                .into_iter()
                .any(|(n, v)| plain_name(n) == plain_name(name) && same_value(written, v))
        })
    }
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (n, v)) in self.pairs.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{n}={v}")?;
        }
        Ok(())
    }
}

/// The workloads of `--workloads` entries (each one workload; empty ones are none).
pub fn parse_list(entries: &[String]) -> Result<Vec<Workload>, FlagError> {
    let mut out = Vec::new();
    for e in entries {
        if let Some(w) = Workload::parse(e)? {
            out.push(w);
        }
    }
    Ok(out)
}

/// The workloads a file holds: one a line (or several, separated by `;`); blank lines and
/// lines starting with `#` are none.
pub fn file_entries(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| l.split(';'))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// An axis name without its marks: `Elements` for `Elements{io}`, `T` for `T{ct}`.
pub fn plain_name(name: &str) -> &str {
    let mut plain = name;
    while let Some(rest) = plain
        .strip_suffix("{ct}")
        .or_else(|| plain.strip_suffix("{io}"))
    {
        plain = rest;
    }
    plain
}

/// An integer as a workload may write it: `4096` or `2^12`.
pub fn integer(text: &str) -> Option<i64> {
    match text.split_once('^') {
        Some(("2", e)) => e
            .parse::<u32>()
            .ok()
            .filter(|e| *e <= 62)
            .map(|e| 1i64 << e),
        Some(_) => None,
        None => text.parse().ok(),
    }
}

/// Whether a value written in a workload is the value `actual` (as a state's name or a
/// compile-time workload's key writes it): the same text, the same integer (`4096` and
/// `2^12`), or the same number.
pub fn same_value(written: &str, actual: &str) -> bool {
    if written == actual {
        return true;
    }
    if let (Some(a), Some(b)) = (integer(written), integer(actual)) {
        return a == b;
    }
    match (written.parse::<f64>(), actual.parse::<f64>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_is_axis_value_pairs() {
        let w = Workload::parse(" T=f32  Rows=1\tCols{io}=2^12 ")
            .expect("parses")
            .expect("one");
        assert_eq!(w.to_string(), "T=f32 Rows=1 Cols{io}=2^12");
        assert_eq!(w.value_of("Cols"), Some("2^12"));
        assert_eq!(w.value_of("T{ct}"), Some("f32"));
        assert_eq!(w.value_of("Elements"), None);
        assert_eq!(Workload::parse("  ").expect("parses"), None);
        for bad in ["Rows", "=1", "Rows=", "Rows=1 Rows{io}=2"] {
            let e = Workload::parse(bad).expect_err(bad);
            assert!(e.0.starts_with("--workloads: "), "{e}");
        }
    }

    #[test]
    fn a_workload_admits_the_points_that_agree_on_its_axes() {
        let w = Workload::parse("Rows=4096 Cols=1")
            .expect("parses")
            .expect("one");
        let point = |r: &'static str, c: &'static str| {
            vec![
                ("T{ct}", "f32"),
                ("Rows{io}", r),
                ("Cols", c),
                ("Mode", "a"),
            ]
        };
        assert!(w.admits(point("2^12", "1")));
        assert!(w.admits(point("4096", "1")));
        assert!(
            !w.admits(point("1", "4096")),
            "a shape is not its transpose"
        );
        assert!(!w.admits(point("4096", "4096")));
        let typed = Workload::parse("T=f32 Rows=4096")
            .expect("parses")
            .expect("one");
        assert!(typed.admits(point("4096", "7")), "Cols not named: any");
        assert!(!typed.admits(vec![("T{ct}", "f64"), ("Rows", "4096")]));
        assert!(
            !typed.admits(vec![("Rows", "4096")]),
            "an axis the point lacks"
        );
        assert!(typed.agrees("T{ct}", "f32") && typed.agrees("Mode", "a"));
        assert!(!typed.agrees("T", "f64"));
    }

    #[test]
    fn values_compare_as_integers_and_numbers_where_they_are_ones() {
        assert!(same_value("4096", "2^12"));
        assert!(same_value("2^0", "1"));
        assert!(same_value("0.5", "0.50"));
        assert!(same_value("bf16", "bf16"));
        assert!(!same_value("bf16", "f16"));
        assert!(!same_value("4096", "4097"));
        assert!(!same_value("2^63", "0"));
        assert_eq!(integer("3^2"), None);
        assert_eq!(plain_name("X{ct}{io}"), "X");
        assert_eq!(plain_name("Weird{zz}"), "Weird{zz}");
    }

    #[test]
    fn a_file_holds_a_workload_a_line() {
        let text = "# captured\nRows=1 Cols=4096\n\n  Rows=4096 Cols=1 ; Rows=2 Cols=2\n";
        assert_eq!(
            file_entries(text),
            ["Rows=1 Cols=4096", "Rows=4096 Cols=1", "Rows=2 Cols=2"]
        );
        let list = parse_list(&file_entries(text)).expect("parses");
        assert_eq!(list.len(), 3);
        assert!(parse_list(&["Rows".into()]).is_err());
        assert!(parse_list(&[String::new()]).expect("parses").is_empty());
    }
}
