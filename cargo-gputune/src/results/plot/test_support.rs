//! Fixtures and SVG inspection shared by the plot tests.

use std::path::{Path, PathBuf};

use resvg::{tiny_skia, usvg};

use gputune_protocol::Status;

use super::Specs;
use crate::results::store::Measurement;
use crate::results::Group;

pub(super) const RT_A: &str = "Elements{io}=2^20";
pub(super) const RT_B: &str = "Elements{io}=2^24";

/// Thirty samples within ±1.5 % of `center`, in a scrambled order.
pub(super) fn measurement(
    function: &str,
    variant: &str,
    rt: &str,
    center: Option<f64>,
) -> Measurement {
    let samples: Vec<f64> = match center {
        Some(c) => (0..30)
            .map(|k| c * (1.0 + 0.03 * (f64::from(k * 7 % 11) / 10.0 - 0.5)))
            .collect(),
        None => Vec::new(),
    };
    Measurement {
        revision: "r1".into(),
        device: "NVIDIA H100 80GB HBM3".into(),
        arch: "sm_90".into(),
        package: "kernels".into(),
        bench: "scale".into(),
        function: function.into(),
        ct_workload: "T=f32".into(),
        variant: variant.into(),
        rt_workload: rt.into(),
        rt_weight: if rt == RT_A { 0.6 } else { 0.98 },
        status: if center.is_some() {
            Status::Ok
        } else {
            Status::VerifyFailed
        },
        message: None,
        center: samples.get(samples.len() / 2).map(|_| {
            let mut s = samples.clone();
            s.sort_by(f64::total_cmp);
            s[s.len() / 2]
        }),
        noise: Some(0.01),
        bandwidth: None,
        samples,
        build_seconds: Some(1.0),
        run_seconds: Some(0.5),
        stop: None,
        control: Vec::new(),
        kernels: Vec::new(),
        provenance: None,
        sm_clocks: Vec::new(),
    }
}

/// `scale` tuned over `items_per_thread` × `tpb`: four variants measured on two workloads
/// (two faster than base, one slower, one about as fast), one that failed verification
/// and one whose build failed.
pub(super) fn two_param_group() -> (Vec<Group>, Specs) {
    let f = "scale";
    let mut ms = Vec::new();
    for (rt, unit) in [(RT_A, 1e-4), (RT_B, 1.6e-3)] {
        for (variant, factor) in [
            ("base", 1.0),
            ("items_per_thread_1.tpb_64", 0.5),
            ("items_per_thread_1.tpb_128", 0.8),
            ("items_per_thread_2.tpb_64", 1.25),
            ("items_per_thread_2.tpb_128", 0.9),
        ] {
            ms.push(measurement(f, variant, rt, Some(unit * factor)));
        }
        ms.push(measurement(f, "items_per_thread_4.tpb_64", rt, None));
    }
    let mut failed = measurement(f, "items_per_thread_4.tpb_128", "*", None);
    failed.status = Status::BuildFailed;
    ms.push(failed);
    let spec = gputune_grammar::parse_str(
        "items_per_thread = [1, 2, 4], tpb = pow2(6..=7), base(items_per_thread = 2, tpb = 128)",
    )
    .expect("valid attribute");
    let specs = Specs::from([(("kernels".to_string(), f.to_string()), spec)]);
    (crate::results::groups(ms, false), specs)
}

pub(super) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gputune-plot-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The contents of every `<text>` element.
pub(super) fn svg_texts(svg: &str) -> Vec<String> {
    let doc = usvg::roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    doc.descendants()
        .filter(|n| n.tag_name().name() == "text")
        .map(|n| n.text().unwrap_or_default().trim().to_string())
        .collect()
}

/// Renders `svg` (without text: no fonts are loaded, so only shapes count) and returns its
/// size and the pixels that are not the white background, and those that are coloured.
pub(super) struct Rendered {
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) inked: usize,
    pub(super) colored: usize,
    pub(super) bluish: usize,
    pub(super) reddish: usize,
}

pub(super) fn render(svg: &str) -> Rendered {
    let tree = usvg::Tree::from_str(svg, &usvg::Options::default()).expect("usvg parses it");
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).expect("a pixmap");
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    let mut r = Rendered {
        width: size.width(),
        height: size.height(),
        inked: 0,
        colored: 0,
        bluish: 0,
        reddish: 0,
    };
    for p in pixmap.pixels() {
        let (red, green, blue) = (
            i32::from(p.red()),
            i32::from(p.green()),
            i32::from(p.blue()),
        );
        if p.alpha() > 0 && red.min(green).min(blue) < 235 {
            r.inked += 1;
        }
        if red.max(green).max(blue) - red.min(green).min(blue) > 40 {
            r.colored += 1;
        }
        if blue > red + 60 {
            r.bluish += 1;
        }
        if red > blue + 60 {
            r.reddish += 1;
        }
    }
    r
}

pub(super) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("the plot is readable")
}

pub(super) fn three_param_group() -> (Vec<Group>, Specs) {
    let mut ms = vec![measurement("f", "base", RT_A, Some(1e-3))];
    for (a, b, c) in [(1, 1, 3), (1, 2, 3), (2, 1, 4), (2, 2, 4), (2, 2, 3)] {
        let center = 1e-3 / f64::from(a * b + c);
        ms.push(measurement(
            "f",
            &format!("a_{a}.b_{b}.c_{c}"),
            RT_A,
            Some(center),
        ));
    }
    let spec =
        gputune_grammar::parse_str("a = [1, 2], b = [1, 2], c = [3, 4], base(a = 1, b = 1, c = 3)")
            .expect("valid");
    let specs = Specs::from([(("kernels".to_string(), "f".to_string()), spec)]);
    (crate::results::groups(ms, false), specs)
}
