//! `GPUTUNE_VARIANTS`: which variants a build compiles in.
//!
//! Unset or empty: a production build (base and the applied `gputune.toml` entries). Else a
//! list of entries separated by commas or white space, or `@FILE` naming a file of entries
//! (one per line, `#` starts a comment). An entry is `[crate::]function.label`, where
//! `label` is a variant's label (`ipt_8.tpb_128`), `base`, or `*` for every point of the
//! space. One entry is an isolated build, like CUB's; several are a batch. An entry for a
//! function this crate does not have is ignored unless it names this crate, because every
//! build script of the build sees the variable; a label that is not a point is an error.

use std::collections::{BTreeMap, HashMap, HashSet};

use gputune_grammar::Point;

use super::scan::Found;

/// The environment variable that selects variants.
pub const VARIANTS_ENV: &str = "GPUTUNE_VARIANTS";

/// One parsed entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// The crate it is for (`None`: any crate with the function).
    pub crate_name: Option<String>,
    /// The tuned function.
    pub function: String,
    /// The variant label; `*` for all, `base` for base.
    pub label: String,
}

/// Parses the entries of `text` (the variable's value, or the file it names).
pub fn parse(text: &str) -> Result<Vec<Selector>, String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.split(|c: char| c == ',' || c.is_whitespace()))
        .filter(|e| !e.is_empty())
        .map(|entry| {
            let (crate_name, rest) = match entry.split_once("::") {
                Some((c, rest)) => (Some(normalise(c)), rest),
                None => (None, entry),
            };
            match rest.split_once('.') {
                Some((function, label)) if !function.is_empty() && !label.is_empty() => {
                    Ok(Selector {
                        crate_name,
                        function: function.to_string(),
                        label: label.to_string(),
                    })
                }
                _ => Err(format!(
                    "`{entry}` is not a variant: write `function.label` (for example \
                     `scale.ipt_8.tpb_128`), `function.base` or `function.*`, optionally \
                     prefixed by `crate::`"
                )),
            }
        })
        .collect()
}

/// Crate names compare with `-` and `_` alike, as cargo treats them.
pub fn normalise(name: &str) -> String {
    name.replace('-', "_")
}

/// A function's space as [`resolve`] walks it: the points, each label's index among them, and
/// the indices selected so far.
type Indexed = (Vec<Point>, HashMap<String, usize>, HashSet<usize>);

/// What `selectors` select in crate `crate_name`: function name → its selected points, in
/// the order the selectors first name them (base is always compiled in and never listed
/// here). Each function's space is enumerated once and labels are looked up in a map, so a
/// batch of the whole space of a large function (10 000+ labels) resolves in one pass.
pub fn resolve(
    selectors: &[Selector],
    crate_name: &str,
    functions: &[Found],
) -> Result<BTreeMap<String, Vec<Point>>, String> {
    let crate_name = normalise(crate_name);
    let mut out: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    let mut spaces: HashMap<&str, Indexed> = HashMap::new();
    for s in selectors {
        let ours = s.crate_name.as_deref().map(|c| c == crate_name);
        if ours == Some(false) {
            continue;
        }
        let Some(f) = functions.iter().find(|f| f.name == s.function) else {
            if ours == Some(true) {
                let names: Vec<&str> = functions.iter().map(|f| f.name.as_str()).collect();
                return Err(format!(
                    "crate `{crate_name}` has no #[tune] function `{}`; it has: {}",
                    s.function,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ));
            }
            continue;
        };
        let (space, index, seen) = spaces.entry(f.name.as_str()).or_insert_with(|| {
            let space = f.spec.space();
            let index = space
                .iter()
                .enumerate()
                .map(|(i, p)| (p.label(), i))
                .collect();
            (space, index, HashSet::new())
        });
        let chosen: Vec<usize> = match s.label.as_str() {
            "*" => (0..space.len()).collect(),
            "base" => Vec::new(),
            label => match index.get(label) {
                Some(&i) => vec![i],
                None => {
                    return Err(format!(
                        "`{}.{label}` is not a variant of `{}`: not a point of its space \
                         (after `require`); labels look like `{}`",
                        s.function,
                        s.function,
                        f.spec.base_point().label()
                    ))
                }
            },
        };
        let slot = out.entry(f.name.clone()).or_default();
        for i in chosen {
            if seen.insert(i) {
                slot.push(space[i].clone());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::scan::scan_source;

    fn functions() -> Vec<Found> {
        scan_source(
            "src/lib.rs",
            "#[tune(a = 1..=3, b = [x, y], require(a != 2), base(a = 2, b = x))] fn f() {}
             #[tune(c = pow2(0..=2), base(c = 1))] fn g() {}",
        )
        .0
    }

    fn labels(text: &str) -> Result<Vec<String>, String> {
        let selected = resolve(&parse(text)?, "my-crate", &functions())?;
        Ok(selected
            .iter()
            .flat_map(|(f, points)| points.iter().map(move |p| format!("{f}.{}", p.label())))
            .collect())
    }

    #[test]
    fn entries_select_one_a_batch_or_all() {
        assert_eq!(labels("").expect("empty"), Vec::<String>::new());
        assert_eq!(labels("f.a_1.b_y").expect("one"), ["f.a_1.b_y"]);
        assert_eq!(
            labels("f.a_3.b_x, f.a_1.b_x\ng.c_4 f.a_3.b_x").expect("batch"),
            ["f.a_3.b_x", "f.a_1.b_x", "g.c_4"]
        );
        assert_eq!(labels("g.*").expect("all"), ["g.c_1", "g.c_2", "g.c_4"]);
        assert_eq!(labels("f.base").expect("base"), Vec::<String>::new());
        assert_eq!(
            labels("my_crate::g.c_2 other::g.c_4 h.x_1 # comment g.c_1").expect("scoped"),
            ["g.c_2"]
        );
    }

    #[test]
    fn every_label_of_a_large_space_resolves_once_in_its_order() {
        // 20 × 20 × 30 = 12 000 points, each named twice and "*" once more: each is selected
        // once, in the order first named.
        let found = scan_source(
            "src/lib.rs",
            "#[tune(a = 0..20, b = 0..20, c = 0..30, base(a = 0, b = 0, c = 0))] fn big() {}",
        )
        .0;
        let space = found[0].spec.space();
        assert_eq!(space.len(), 12_000);
        let mut text: Vec<String> = space
            .iter()
            .rev()
            .map(|p| format!("big.{}", p.label()))
            .collect();
        text.extend(space.iter().map(|p| format!("big.{}", p.label())));
        text.push("big.*".into());
        let selected =
            resolve(&parse(&text.join("\n")).expect("parses"), "c", &found).expect("resolves");
        let got: Vec<String> = selected["big"].iter().map(|p| p.label()).collect();
        let want: Vec<String> = space.iter().rev().map(|p| p.label()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn mistakes_are_errors() {
        assert!(labels("f.a_2.b_x")
            .expect_err("required away")
            .contains("not a variant of `f`"));
        assert!(labels("f.a_9.b_x")
            .expect_err("no such value")
            .contains("a_2.b_x"));
        assert!(labels("my-crate::h.x_1")
            .expect_err("no such function")
            .contains("has no #[tune] function `h`; it has: f, g"));
        assert!(labels("f").expect_err("no label").contains("not a variant"));
    }
}
