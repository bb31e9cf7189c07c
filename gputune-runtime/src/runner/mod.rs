//! The `main` of a bench binary: parse the command line, run the selected states, write
//! the table and the JSON.
//!
//! Exit codes (part of the protocol with `cargo gputune`, see `docs/bench-json.md`):
//! 0 every state ran (or was skipped, or timed out with samples), 1 some state failed,
//! 2 usage error, 3 no usable device, 4 device lost (a sticky CUDA error made the context
//! unusable: the failing state is reported, then the process ends).

mod backends;
mod config;
mod events;
mod listing;
mod passes;
mod progress;
mod race;
mod results;
mod selection;
mod states;
mod variant;
mod workloads;

use gputune_protocol::{ExitCode, StateStatus};

use self::backends::Backends;
use self::config::RunConfig;
use self::events::EventStream;
use self::states::Runner;
use crate::bench::Bench;
use crate::criterion::Criteria;
use crate::error::{Error, Result};
use crate::output::RunReport;

/// Version of the protocol between bench binaries and `cargo gputune`: the protocol crate's.
pub use gputune_protocol::PROTOCOL_VERSION as PROTOCOL;

/// Exit code: every state ran.
pub const EXIT_OK: i32 = ExitCode::Ok as i32;
/// Exit code: at least one state failed (the JSON says which and why).
pub const EXIT_FAILED: i32 = ExitCode::Failed as i32;
/// Exit code: bad command line.
pub const EXIT_USAGE: i32 = ExitCode::Usage as i32;
/// Exit code: the device could not be opened.
pub const EXIT_NO_DEVICE: i32 = ExitCode::NoDevice as i32;
/// Exit code: device lost. A state failed with a sticky CUDA error (an illegal address, a
/// failed launch, a trap, …) after which the context cannot be used again; that state was
/// reported (its `--jsonl` line written, `error_kind` `device_lost`), the states not run yet
/// are not, and one line on stderr names the CUDA error. `cargo gputune` records the variant
/// in progress as crashed and runs the rest in a fresh process.
pub const EXIT_DEVICE_LOST: i32 = ExitCode::DeviceLost as i32;

/// Runs the bench binary with the process's arguments and exits.
///
/// ```no_run
/// use gputune_runtime::{Bench, BenchResult, State};
///
/// fn sum(state: &mut State<'_>) -> BenchResult {
///     let n = state.get_int64("Elements")? as usize;
///     let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
///     state.add_element_count(n as u64);
///     state.add_global_memory_reads::<f32>(n as u64);
///     state.exec(|_| {
///         std::hint::black_box(data.iter().sum::<f32>());
///         Ok(())
///     });
///     Ok(())
/// }
///
/// fn main() {
///     gputune_runtime::main(vec![Bench::new("sum", sum).add_int64_axis("Elements", [1 << 20])]);
/// }
/// ```
pub fn main(benches: Vec<Bench>) -> ! {
    main_with(benches, Criteria::builtin())
}

/// [`main`] with custom stopping criteria registered.
pub fn main_with(benches: Vec<Bench>, criteria: Criteria) -> ! {
    // A copy of this binary started to compile kernels beside the bench that started it
    // (NVRTC runs one compilation at a time per process): it serves and ends.
    #[cfg(feature = "cuda")]
    {
        use crate::backend::cuda::compile_worker;
        if let Some(code) = compile_worker::serve_if_asked() {
            std::process::exit(code)
        }
        compile_worker::enable();
    }
    let args: Vec<String> = std::env::args().collect();
    let code = match run(&args, benches, criteria) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            match e {
                Error::Usage(_) => EXIT_USAGE,
                Error::NoDevice(_) => EXIT_NO_DEVICE,
                Error::DeviceLost(_) => EXIT_DEVICE_LOST,
                _ => EXIT_FAILED,
            }
        }
    };
    // Background kernel compilations must not be running while `exit` tears NVRTC down.
    #[cfg(feature = "cuda")]
    crate::backend::cuda::finish_compilations();
    std::process::exit(code)
}

/// Runs the bench binary with `args` (the first being the program name) and returns the
/// exit code. Errors are usage errors or a device that cannot be opened; a device lost while
/// running ends the run early with [`EXIT_DEVICE_LOST`] (the results so far are written, and
/// its line is printed on stderr).
pub fn run(args: &[String], benches: Vec<Bench>, criteria: Criteria) -> Result<i32> {
    crate::timeline::start();
    let Some(cli) = config::parse_flags(args)? else {
        return Ok(EXIT_OK);
    };
    let (benches, indices) = selection::select(benches, &cli)?;
    if cli.list {
        listing::list(&benches, &indices);
        return Ok(EXIT_OK);
    }
    if cli.devices {
        listing::devices(&benches, &cli)?;
        return Ok(EXIT_OK);
    }

    let RunConfig { exec, mut variants } = RunConfig::new(&cli, criteria, &benches)?;
    variant::plan(&benches, &cli.variant);
    let events = EventStream::open(cli.jsonl.as_deref())?;
    let backends = crate::timeline::timed(crate::timeline::Part::DeviceOpen, || {
        Backends::open(&benches, &cli)
    })?;
    // States of one variant over all selected benches: a pass runs them per variant.
    let listed = workloads::Listed::new(&cli, &benches)?;
    let per_variant = |listed: &workloads::Listed| -> usize {
        benches.iter().map(|b| states::state_count(b, listed)).sum()
    };
    let states = per_variant(&listed) * variants.len();
    let mut runner = Runner::new(exec, backends, events, &cli, (states, listed));

    let mut report = RunReport {
        argv: args.to_vec(),
        devices: runner.devices().to_vec(),
        benchmarks: Vec::new(),
        provenance: None,
    };
    loop {
        // Each pass says where and how it measures before its first variant: a later pass
        // may meet other clocks or another power limit than the first. Reading the device's
        // settings is part of opening it, as the timeline counts.
        let provenance =
            crate::timeline::timed(crate::timeline::Part::DeviceOpen, || runner.pass_starts())?;
        report.provenance.get_or_insert(provenance);
        for (bench, &index) in benches.iter().zip(&indices) {
            report
                .benchmarks
                .push(runner.bench(bench, index, &variants)?);
            if runner.lost().is_some() {
                break;
            }
        }
        if !cli.more_on_stdin || runner.lost().is_some() {
            break;
        }
        runner.pass_done()?;
        let Some(next) = passes::read_next()? else {
            break;
        };
        let config = RunConfig::new(&next, runner.take_criteria(), &benches)?;
        variant::plan(&benches, &next.variant);
        let listed = workloads::Listed::new(&next, &benches)?;
        let states = per_variant(&listed) * config.variants.len();
        runner.next_pass(config.exec, &next, (states, listed));
        variants = config.variants;
    }
    results::write(&report, cli.json.as_deref())?;
    runner.process_done()?;

    if let Some(lost) = runner.lost() {
        eprintln!(
            "error: device lost {lost} (exit {EXIT_DEVICE_LOST}: the process ends here, the \
             states after this one did not run)"
        );
        return Ok(EXIT_DEVICE_LOST);
    }
    let failed = report
        .benchmarks
        .iter()
        .flat_map(|b| &b.states)
        .any(|s| s.status() == StateStatus::Failed);
    // Everything is written (events go out unbuffered, one write each). Tearing the CUDA
    // contexts and the workloads' buffers down one by one would only keep `cargo gputune`
    // waiting for this process; the driver frees all of it when the process ends.
    std::mem::forget(runner);
    Ok(if failed { EXIT_FAILED } else { EXIT_OK })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BenchResult;
    use crate::state::State;

    fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    #[test]
    fn a_lost_device_reports_its_state_then_ends_the_run_with_exit_4() {
        let dir = std::env::temp_dir().join(format!("gputune-lost-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let jsonl = dir.join("run.jsonl");
        // The second state loses the device (as a sticky CUDA error would); the third, and
        // the second bench, must not run.
        let lose = |state: &mut State<'_>| -> BenchResult {
            if state.get_int64("N")? == 2 {
                return Err(Box::new(Error::DeviceLost(
                    "synchronising: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was \
                     encountered"
                        .into(),
                )));
            }
            state.exec(|_| Ok(()));
            Ok(())
        };
        let untouched = |_: &mut State<'_>| -> BenchResult { panic!("ran after the loss") };
        let benches = vec![
            Bench::new("lose", lose).add_int64_axis("N", [1, 2, 3]),
            Bench::new("after", untouched).add_int64_axis("N", [1]),
        ];
        let args: Vec<String> = [
            "bench",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "3",
            "--min-samples",
            "3",
            "--no-batch",
            "--jsonl",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([jsonl.display().to_string()])
        .collect();
        let code = run(&args, benches, Criteria::builtin()).expect("runs");
        assert_eq!(code, EXIT_DEVICE_LOST);

        let events = lines(&jsonl);
        let states: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["event"] == "state")
            .map(|e| &e["state"])
            .collect();
        assert_eq!(states.len(), 2, "{events:?}");
        assert_eq!(states[0]["status"], "ok");
        assert!(states[0]["error_kind"].is_null());
        assert_eq!(states[1]["status"], "failed");
        assert_eq!(states[1]["error_kind"], "device_lost");
        assert!(
            states[1]["error"]
                .as_str()
                .is_some_and(|e| e.contains("CUDA_ERROR_ILLEGAL_ADDRESS")),
            "{}",
            states[1]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_pass_starts_with_its_provenance_and_the_document_keeps_it() {
        let dir = std::env::temp_dir().join(format!("gputune-prov-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (jsonl, json) = (dir.join("run.jsonl"), dir.join("run.json"));
        let plain = |state: &mut State<'_>| -> BenchResult {
            state.exec(|_| Ok(()));
            Ok(())
        };
        let args: Vec<String> = [
            "bench",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "3",
            "--min-samples",
            "3",
            "--no-batch",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(["--jsonl".into(), jsonl.display().to_string()])
        .chain(["--json".into(), json.display().to_string()])
        .collect();
        let code = run(&args, vec![Bench::new("plain", plain)], Criteria::builtin());
        assert_eq!(code.expect("runs"), EXIT_OK);
        let events = lines(&jsonl);
        assert_eq!(events[0]["event"], "provenance", "{events:?}");
        let p = &events[0]["provenance"];
        // A CPU run: what built it and where, and no CUDA side.
        assert!(p["cuda"].is_null(), "{p}");
        assert!(
            p["rustc"].as_str().is_some_and(|r| r.starts_with("rustc ")),
            "{p}"
        );
        assert_eq!(p["gputune"], env!("CARGO_PKG_VERSION"));
        assert_eq!(events[1]["event"], "variant", "{events:?}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("--json written"))
                .expect("JSON");
        assert_eq!(&doc["meta"]["provenance"], p);
        // The CPU reads no SM clock: no clocks, rather than misaligned ones.
        let samples = &doc["benchmarks"][0]["states"][0]["samples"];
        assert_eq!(
            samples["gpu"].as_array().map(Vec::len),
            Some(3),
            "{samples}"
        );
        assert_eq!(samples["sm_clock"], serde_json::json!([]), "{samples}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_verified_state_takes_no_warm_up_run_and_an_unverified_one_does() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static VERIFIED_RUNS: AtomicUsize = AtomicUsize::new(0);
        static PLAIN_RUNS: AtomicUsize = AtomicUsize::new(0);
        let verified = |state: &mut State<'_>| -> BenchResult {
            let mut out = vec![0.0f32; 4];
            let expected = vec![1.0f32; 4];
            state.verify_against(&mut out, &expected, crate::verify::Tolerance::EXACT, |o| {
                o.fill(1.0);
                Ok(())
            })?;
            state.exec(|_| {
                VERIFIED_RUNS.fetch_add(1, Ordering::SeqCst);
                Ok(())
            });
            Ok(())
        };
        let plain = |state: &mut State<'_>| -> BenchResult {
            state.exec(|_| {
                PLAIN_RUNS.fetch_add(1, Ordering::SeqCst);
                Ok(())
            });
            Ok(())
        };
        let benches = vec![Bench::new("verified", verified), Bench::new("plain", plain)];
        let args: Vec<String> = [
            "bench",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "3",
            "--min-samples",
            "3",
            "--no-batch",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            run(&args, benches, Criteria::builtin()).expect("runs"),
            EXIT_OK
        );
        // Three samples each; the warm-up only where nothing ran before the measurement.
        assert_eq!(VERIFIED_RUNS.load(Ordering::SeqCst), 3);
        assert_eq!(PLAIN_RUNS.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn only_the_listed_workloads_run_and_only_they_are_reported() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static RAN: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!("gputune-listed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (jsonl, file) = (dir.join("run.jsonl"), dir.join("workloads.txt"));
        std::fs::write(&file, "Rows=4096 Cols=1\nRows=1 Cols=4096\n").expect("written");
        let shaped = |state: &mut State<'_>| -> BenchResult {
            RAN.fetch_add(1, Ordering::SeqCst);
            state.exec(|_| Ok(()));
            Ok(())
        };
        let benches = vec![Bench::new("shaped", shaped)
            .add_int64_axis("Rows", [1, 4096])
            .add_int64_axis("Cols", [1, 4096])];
        let args: Vec<String> = [
            "bench",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "3",
            "--min-samples",
            "3",
            "--no-batch",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(["--workloads".into(), format!("@{}", file.display())])
        .chain(["--jsonl".into(), jsonl.display().to_string()])
        .collect();
        assert_eq!(
            run(&args, benches, Criteria::builtin()).expect("runs"),
            EXIT_OK
        );
        let names: Vec<String> = lines(&jsonl)
            .into_iter()
            .filter(|e| e["event"] == "state")
            .map(|e| e["state"]["name"].as_str().unwrap_or_default().to_string())
            .collect();
        // Two of the product's four: not 1 × 1, not 4096 × 4096, and none as skipped.
        assert_eq!(
            names,
            ["Device=0 Rows=1 Cols=4096", "Device=0 Rows=4096 Cols=1"]
        );
        assert_eq!(RAN.load(Ordering::SeqCst), 2);
        let bad: Vec<String> = ["bench", "--workloads", "Row=1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let only = |_: &mut State<'_>| -> BenchResult { Ok(()) };
        let e = run(
            &bad,
            vec![Bench::new("b", only).add_int64_axis("Rows", [1])],
            Criteria::builtin(),
        )
        .expect_err("an unknown axis");
        assert!(matches!(e, Error::Usage(_)), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_state_is_classified_from_the_error_the_bench_returned() {
        let dir = std::env::temp_dir().join(format!("gputune-kinds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let jsonl = dir.join("run.jsonl");
        let fail = |state: &mut State<'_>| -> BenchResult {
            match state.get_int64("N")? {
                1 => Err(Box::new(Error::Compile("error: expected a `;`".into()))),
                2 => Err(Box::new(Error::InvalidLaunch("2048 threads".into()))),
                _ => Err("the bench's own error".into()),
            }
        };
        let args: Vec<String> = ["bench", "--jsonl"]
            .iter()
            .map(|s| s.to_string())
            .chain([jsonl.display().to_string()])
            .collect();
        let benches = vec![Bench::new("fail", fail).add_int64_axis("N", [1, 2, 3])];
        let code = run(&args, benches, Criteria::builtin()).expect("runs");
        assert_eq!(code, EXIT_FAILED);
        let kinds: Vec<serde_json::Value> = lines(&jsonl)
            .into_iter()
            .filter(|e| e["event"] == "state")
            .map(|e| e["state"]["error_kind"].clone())
            .collect();
        assert_eq!(kinds, ["compile", "invalid", "other"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
