//! Bench flags and `-a` axes.

use gputune_protocol::BenchArgs;
use gputune_tests::fuzz;

use super::{mutated, text};

const FLAGS: &[&str] = &[
    "--max-noise",
    "--min-time",
    "--min-samples",
    "--timeout",
    "--max-angle",
    "--min-r2",
    "--target-samples",
    "--criterion-param",
    "--throttle-threshold",
    "--no-batch",
    "--race",
    "--decide",
    "--batch-target-time",
    "--device",
    "--cpu",
    "--profile",
    "--disable-blocking-kernel",
    "--stopping-criterion",
    "--variant",
    "--workloads",
    "-b",
    "-a",
    "--list",
    "--json",
    "--jsonl",
    "--more-on-stdin",
    "--bench",
    "--",
    "-",
    "--unknown",
];
const FLAG_VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "0.5",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "-inf",
    "1e-320",
    "18446744073709551616",
    "stdrel",
    "entropy",
    "sample-count",
    "x=1",
    "x=NaN",
    "=",
    "a,b",
    "scale.ipt_8.tpb_128",
    "@",
    "Elements[pow2]=[16:28:4]",
    "",
    " ",
    "-b",
    "\u{0}",
    "T{ct}=f32",
    "Rows=1 Cols=4096;Rows=4096 Cols=1",
    "T=f32 Rows=2^12",
];

#[test]
fn bench_flags_parse_or_refuse_and_round_trip() {
    fuzz::run(
        "bench-flags",
        |rng| {
            let argv: Vec<&str> = (0..rng.below(8))
                .map(|_| {
                    if rng.one_in(2) {
                        *rng.pick(FLAGS)
                    } else {
                        *rng.pick(FLAG_VALUES)
                    }
                })
                .collect();
            serde_json::to_vec(&argv).unwrap_or_default()
        },
        |input| {
            let Ok(argv) = serde_json::from_slice::<Vec<String>>(input) else {
                return Ok(());
            };
            let _ = BenchArgs::next_pass(&text(input));
            let Ok(args) = BenchArgs::from_flags(&argv) else {
                return Ok(());
            };
            let _ = args.measurement_settings();
            let _ = args.extra_params();
            if args.validate().is_err() {
                return Ok(());
            }
            // `to_args` promises the line that parses back into the same flags.
            let again = BenchArgs::from_flags(args.to_args())
                .map_err(|e| format!("{argv:?} → {:?} does not parse: {e}", args.to_args()))?;
            if again != args {
                return Err(format!(
                    "{argv:?} → {:?} parses differently",
                    args.to_args()
                ));
            }
            Ok(())
        },
    );
}

const AXIS_TOKENS: &[&str] = &[
    "[pow2]",
    "[",
    "]",
    ":",
    ",",
    "=",
    "{io}",
    "{ct}",
    "Elements",
    "T",
    "f32",
    "2^",
    "-",
    "0:0:0",
    "0:9223372036854775807:1",
    "1:1000000000:1",
    "62",
    "64",
    "1e9",
    "0x10",
];

#[test]
fn axis_overrides_parse_and_apply_or_refuse() {
    use gputune_runtime::axis::{Axis, AxisValues};
    use gputune_runtime::cli::{ApplyOverride, AxisOverride};
    let seeds: Vec<Vec<u8>> = [
        "Elements{io}[pow2]=[20,24,28]",
        "Elements[pow2]=[16:28:4]",
        "T{ct}=f32",
        "T=[f32,f64]",
        "N=[1:10:3]",
        "Mode=fast",
        "F=[0.5,1.5]",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    // One axis of every kind, as a bench declares them; the bench runner applies `-a` to
    // each axis that answers to its name with this same `apply`.
    let axes = [
        Axis {
            name: "N".into(),
            values: AxisValues::Int64(vec![1, 2]),
        },
        Axis {
            name: "Elements{io}".into(),
            values: AxisValues::Int64Pow2(vec![16, 20]),
        },
        Axis {
            name: "F".into(),
            values: AxisValues::Float64(vec![0.5]),
        },
        Axis {
            name: "Mode".into(),
            values: AxisValues::String(vec!["fast".into()]),
        },
        Axis {
            name: "T{ct}".into(),
            values: AxisValues::Type(vec!["f32".into(), "f64".into()]),
        },
    ];
    fuzz::run(
        "axis-override",
        |rng| mutated(rng, &seeds, AXIS_TOKENS, 4),
        |input| {
            let Ok(o) = AxisOverride::parse(&text(input)) else {
                return Ok(());
            };
            for axis in &axes {
                if let Ok(values) = o.apply(axis) {
                    if values.len() > gputune_runtime::cli::MAX_AXIS_VALUES {
                        return Err(format!("{} values for {}", values.len(), axis.name));
                    }
                }
            }
            Ok(())
        },
    );
}
