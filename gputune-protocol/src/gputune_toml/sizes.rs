//! The sizes a per-size entry holds for: one range per size axis it constrains, so that a
//! shape of several axes (rows × columns) has its own winner. One axis is written with the
//! `size-axis` / `size-from` / `size-below` keys; several with one `size-ranges` table:
//!
//! ```toml
//! [[mmvq."Q=Q4K"."NVIDIA H200"]]
//! size-ranges = { Rows = 128256, Cols = "4096..8192" }   # exactly 128256 rows, 4096 to 8191 columns
//! nwarps = 2
//! rows_per_block = 2
//! ```
//!
//! A range is an integer (that size alone) or a string: `"a..b"` (from a, below b), `"a.."`,
//! `"..b"`, `"a..=b"` (b included). An axis an entry does not name holds for every size.

use super::SizeRange;

/// A workload's size on an axis, by the axis's name; `None` where it has no such axis.
pub type AxisValue<'a> = dyn Fn(&str) -> Option<u64> + 'a;

/// Whether the sizes `value` gives (per axis name; `None` where the workload has no such axis)
/// are inside every range of `ranges`. No ranges: every size.
pub fn holds(ranges: &[SizeRange], value: impl Fn(&str) -> Option<u64>) -> bool {
    ranges
        .iter()
        .all(|r| value(&r.axis).is_some_and(|v| r.contains(v)))
}

/// Whether some shape is held by both `a` and `b`: they overlap on every axis either names
/// (an axis only one names is unconstrained in the other).
pub fn overlap(a: &[SizeRange], b: &[SizeRange]) -> bool {
    a.iter()
        .all(|x| b.iter().filter(|y| y.axis == x.axis).all(|y| x.overlaps(y)))
}

/// `Rows 128256..128257 × Cols 4096..`: how messages name an entry's sizes (empty: none).
pub fn describe(ranges: &[SizeRange]) -> String {
    ranges
        .iter()
        .map(SizeRange::describe)
        .collect::<Vec<_>>()
        .join(" × ")
}

/// The ranges of a `size-ranges` table.
pub(super) fn parse(key: &str, value: &toml::Value) -> Result<Vec<SizeRange>, String> {
    let table = value.as_table().ok_or_else(|| {
        format!("`{key}` = {value}: expected a table of axis = range (`{{ Rows = 1, Cols = \"4096..\" }}`)")
    })?;
    if table.is_empty() {
        return Err(format!("`{key}` is empty: name at least one axis"));
    }
    table.iter().map(|(axis, v)| range(key, axis, v)).collect()
}

fn range(key: &str, axis: &str, v: &toml::Value) -> Result<SizeRange, String> {
    let bad = || {
        format!(
            "`{key}.{axis}` = {v}: a range is a size (`4096`) or a string `\"a..b\"`, `\"a..\"`, \
             `\"..b\"` or `\"a..=b\"` of non-negative integers"
        )
    };
    if axis.trim().is_empty() {
        return Err(format!("`{key}` names an empty axis"));
    }
    let number = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
    let (from, below) = match v {
        toml::Value::Integer(i) if *i >= 0 => (Some(*i as u64), (*i as u64).checked_add(1)),
        toml::Value::String(s) => match s.split_once("..") {
            None => {
                let n = number(s)?;
                (Some(n), n.checked_add(1))
            }
            Some((a, b)) => {
                let from = (!a.trim().is_empty()).then(|| number(a)).transpose()?;
                let below = match b.strip_prefix('=') {
                    Some(last) => number(last)?.checked_add(1),
                    None if b.trim().is_empty() => None,
                    None => Some(number(b)?),
                };
                (from, below)
            }
        },
        _ => return Err(bad()),
    };
    if below == Some(0) || matches!((from, below), (Some(f), Some(b)) if f >= b) {
        return Err(format!("`{key}.{axis}` = {v}: the range is empty"));
    }
    Ok(SizeRange {
        axis: axis.to_string(),
        from,
        below,
    })
}

/// The `size-ranges` table's inline text: `{ Rows = 128256, Cols = "4096.." }`.
pub(super) fn text(ranges: &[SizeRange], key: impl Fn(&str) -> String) -> String {
    let parts: Vec<String> = ranges
        .iter()
        .map(|r| {
            let value = match (r.from, r.below) {
                (Some(f), Some(b)) if b == f.saturating_add(1) => f.to_string(),
                (from, below) => format!(
                    "\"{}..{}\"",
                    from.map(|f| f.to_string()).unwrap_or_default(),
                    below.map(|b| b.to_string()).unwrap_or_default()
                ),
            };
            format!("{} = {value}", key(&r.axis))
        })
        .collect();
    format!("{{ {} }}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(axis: &str, from: Option<u64>, below: Option<u64>) -> SizeRange {
        SizeRange {
            axis: axis.into(),
            from,
            below,
        }
    }

    #[test]
    fn ranges_read_as_written() {
        let table: toml::Table =
            "x = { Rows = 7, Cols = \"4096..8192\", Batch = \"..=8\", K = \"9..\", N = \"5\" }"
                .parse()
                .expect("toml");
        let got = parse("x", &table["x"]).expect("ranges");
        // Keys come back in the table's (sorted) order.
        assert_eq!(
            got,
            [
                r("Batch", None, Some(9)),
                r("Cols", Some(4096), Some(8192)),
                r("K", Some(9), None),
                r("N", Some(5), Some(6)),
                r("Rows", Some(7), Some(8)),
            ]
        );
        let written = text(&got, str::to_string);
        assert_eq!(
            written,
            "{ Batch = \"..9\", Cols = \"4096..8192\", K = \"9..\", N = 5, Rows = 7 }"
        );
        let again: toml::Table = format!("x = {written}").parse().expect("toml");
        assert_eq!(parse("x", &again["x"]).expect("ranges"), got);
        for bad in [
            "{ Rows = -1 }",
            "{ Rows = \"9..9\" }",
            "{ Rows = \"a..\" }",
            "{}",
            "3",
            "{ Rows = 1.5 }",
        ] {
            let t: toml::Table = format!("x = {bad}").parse().expect("toml");
            assert!(parse("x", &t["x"]).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_shape_is_held_on_every_named_axis_and_boxes_overlap_on_all_of_theirs() {
        let lm_head = [
            r("Rows", Some(128256), Some(128257)),
            r("Cols", Some(4096), Some(4097)),
        ];
        let at = |rows: u64, cols: u64| {
            move |axis: &str| match axis {
                "Rows" => Some(rows),
                "Cols" => Some(cols),
                _ => None,
            }
        };
        assert!(holds(&lm_head, at(128256, 4096)));
        assert!(
            !holds(&lm_head, at(128256, 14336)),
            "4096 × 1 is not 1 × 4096"
        );
        assert!(!holds(&lm_head, at(4096, 128256)));
        assert!(!holds(&lm_head, |_| None), "a workload without the axes");
        assert!(holds(&[], |_| None), "no ranges: every size");
        let wide = [r("Cols", Some(4096), None)];
        assert!(overlap(&lm_head, &wide) && overlap(&wide, &lm_head));
        let narrow = [
            r("Rows", None, Some(1025)),
            r("Cols", Some(4096), Some(4097)),
        ];
        assert!(!overlap(&lm_head, &narrow) && !overlap(&narrow, &lm_head));
        assert!(
            overlap(&[], &narrow),
            "an entry for every size meets any other"
        );
        assert_eq!(describe(&lm_head), "Rows 128256..128257 × Cols 4096..4097");
    }
}
