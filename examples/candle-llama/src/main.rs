//! `candle-llama`: tokens per second of candle-transformers' Llama at Llama-3-8B's dimensions
//! (synthetic weights made on the spot: bf16, f16, or a Q4_K GGUF written in memory), prefill
//! and decode, over several runs after a warm-up. The same source builds against candle as
//! released (this workspace) and against candle with gputune's winners in (`tuned/`, the
//! `tuned` feature), so that the two binaries differ only in candle's launches.
//!
//! ```text
//! candle-llama --model bf16|f16|q4k|q8_0|bert [--layers N] [--prompt 512] [--decode 64] [--runs 5]
//!              [--device 0] [--seed 1] [--json FILE]
//! ```

mod bench;
mod model;
#[cfg(feature = "tuned")]
mod tuned;

use std::time::Instant;

use anyhow::{Context, Result};
use candle_core::Device;

use bench::{Run, Summary, Work};
use model::{Dims, Kind, Model};

/// Which candle this binary was built against.
fn build() -> &'static str {
    if cfg!(feature = "tuned") {
        "tuned"
    } else if env!("CARGO_PKG_NAME").ends_with("-tuned") {
        // tuned/ without its feature: the patched candle with no chooser set, which must
        // launch as released.
        "patched"
    } else {
        "released"
    }
}

/// The command line.
#[derive(Debug, Clone, PartialEq)]
struct Args {
    kind: Kind,
    layers: usize,
    prompt: usize,
    decode: usize,
    runs: usize,
    device: usize,
    seed: u64,
    json: Option<String>,
}

const USAGE: &str = "usage: candle-llama --model bf16|f16|q4k|q8_0|bert [--layers N (32)] \
[--prompt TOKENS (512)] [--decode TOKENS (64)] [--runs N (5)] [--device N (0)] [--seed N (1)] \
[--json FILE]";

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Args> {
    let mut out = Args {
        kind: Kind::Bf16,
        layers: Dims::LLAMA3_8B.layers,
        prompt: 512,
        decode: 64,
        runs: 5,
        device: 0,
        seed: 1,
        json: None,
    };
    let mut model = None;
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            anyhow::bail!("{USAGE}");
        }
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value\n{USAGE}"))?;
        let number = || -> Result<usize> {
            value
                .parse()
                .with_context(|| format!("{flag} {value:?}: not a whole number"))
        };
        match flag.as_str() {
            "--model" => model = Some(Kind::parse(&value)?),
            "--layers" => out.layers = number()?,
            "--prompt" => out.prompt = number()?,
            "--decode" => out.decode = number()?,
            "--runs" => out.runs = number()?,
            "--device" => out.device = number()?,
            "--seed" => out.seed = number()? as u64,
            "--json" => out.json = Some(value),
            _ => anyhow::bail!("unknown flag {flag}\n{USAGE}"),
        }
    }
    out.kind = model.with_context(|| format!("--model is required\n{USAGE}"))?;
    anyhow::ensure!(out.layers >= 1, "--layers must be at least 1");
    anyhow::ensure!(out.prompt >= 1, "--prompt must be at least 1 token");
    anyhow::ensure!(out.runs >= 1, "--runs must be at least 1");
    let positions = out.prompt + out.decode;
    anyhow::ensure!(
        positions <= 4096,
        "--prompt + --decode = {positions}: candle's quantized Llama covers 4096 positions"
    );
    Ok(out)
}

/// The GPU `ordinal`, or an error that says there is none to run on.
fn gpu(ordinal: usize) -> Result<(Device, String)> {
    let none = || {
        format!(
            "no CUDA GPU {ordinal}: candle-llama measures candle's CUDA kernels and needs a GPU \
             and its driver (and cuBLAS, cuRAND, NVRTC on the library path)"
        )
    };
    // cudarc panics where it loads the driver at run time (tuned/) and finds none: silence
    // the panic's message and say it as an error.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let opened = std::panic::catch_unwind(|| Device::new_cuda(ordinal));
    std::panic::set_hook(hook);
    let dev = match opened {
        Ok(dev) => dev.with_context(none)?,
        Err(panic) => {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            anyhow::bail!("{}: {why}", none())
        }
    };
    let name = dev
        .as_cuda_device()?
        .cuda_stream()
        .context()
        .name()
        .unwrap_or_else(|e| format!("unknown ({e})"));
    Ok((dev, name))
}

/// The CUDA libraries this process has mapped (from `/proc/self/maps`), each path once: the
/// evidence that the released and the tuned build run the same cuBLAS.
fn cuda_libraries() -> Vec<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut found: Vec<String> = Vec::new();
    for path in maps.lines().filter_map(|l| l.split_whitespace().nth(5)) {
        let name = path.rsplit('/').next().unwrap_or(path);
        let cuda = [
            "libcublas",
            "libcurand",
            "libnvrtc",
            "libcudart",
            "libcuda.",
        ]
        .iter()
        .any(|p| name.starts_with(p));
        if cuda && !found.iter().any(|f| f == path) {
            found.push(path.to_string());
        }
    }
    found
}

fn main() -> Result<()> {
    let args = parse_args(std::env::args().skip(1))?;
    #[cfg(feature = "tuned")]
    tuned::register()?;
    let dims = Dims {
        layers: args.layers,
        ..Dims::LLAMA3_8B
    };
    let (dev, gpu_name) = gpu(args.device)?;
    println!(
        "candle-llama ({}): {} dimensions, {} layers, {} weights, on {gpu_name}",
        build(),
        if args.kind == Kind::Bert {
            "BERT-base (at most 12 layers)"
        } else {
            "Llama-3-8B"
        },
        dims.layers,
        args.kind.name()
    );
    let t = Instant::now();
    let mut model = Model::load(args.kind, &dims, &dev, args.seed)?;
    dev.synchronize()?;
    let load_s = t.elapsed().as_secs_f64();
    println!("loaded in {load_s:.1} s");

    let work = Work {
        prompt: args.prompt,
        decode: args.decode,
        vocab: args.kind.vocab(&dims),
    };
    let mut runs = Vec::new();
    let mut warmup = None;
    let mut check = None;
    for i in 0..=args.runs {
        let (r, logits) = bench::run(&mut model, &dev, &work)
            .with_context(|| format!("run {i} (0 is the warm-up)"))?;
        if i == 0 {
            // After the timing: it copies the logits to the host.
            let (sum, abs) = bench::checksum(&logits)?;
            println!("last logits of the warm-up: sum {sum:.6e}, sum of magnitudes {abs:.6e}");
            check = Some(serde_json::json!({"sum": sum, "abs_sum": abs}));
        }
        let label = if i == 0 {
            "warm-up".to_string()
        } else {
            format!("run {i}/{}", args.runs)
        };
        println!(
            "{label}: prefill {} tokens {:.3} s = {:.1} tokens/s; decode {} tokens {:.3} s = \
             {:.2} tokens/s",
            work.prompt,
            r.prefill_s,
            r.prefill_tps(&work),
            work.decode,
            r.decode_s,
            r.decode_tps(&work)
        );
        if i == 0 {
            warmup = Some(r);
        } else {
            runs.push(r);
        }
    }
    let prefill = Summary::of(
        &runs
            .iter()
            .map(|r| r.prefill_tps(&work))
            .collect::<Vec<_>>(),
    )
    .context("no runs")?;
    let decode = Summary::of(&runs.iter().map(|r| r.decode_tps(&work)).collect::<Vec<_>>())
        .context("no runs")?;
    println!(
        "{} {} ({} runs): prefill {} tokens/s, decode {} tokens/s (median (min–max))",
        build(),
        args.kind.name(),
        runs.len(),
        prefill.show(),
        decode.show()
    );
    let launches = chooser_report();
    let libraries = cuda_libraries();
    println!("CUDA libraries loaded: {}", libraries.join(", "));
    if let Some(path) = &args.json {
        let doc = serde_json::json!({
            "build": build(),
            "model": args.kind.name(),
            "gpu": gpu_name,
            "layers": dims.layers,
            "prompt_tokens": work.prompt,
            "decode_tokens": work.decode,
            "load_s": load_s,
            "warmup": warmup.map(|r| run_json(&r, &work)),
            "logits_checksum": check,
            "runs": runs.iter().map(|r| run_json(r, &work)).collect::<Vec<_>>(),
            "prefill_tokens_per_s": prefill.json(),
            "decode_tokens_per_s": decode.json(),
            "launches": launches,
            "cuda_libraries": libraries,
        });
        let text = serde_json::to_string_pretty(&doc)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {path}"))?;
    }
    Ok(())
}

fn run_json(r: &Run, work: &Work) -> serde_json::Value {
    serde_json::json!({
        "prefill_s": r.prefill_s,
        "decode_s": r.decode_s,
        "prefill_tokens_per_s": r.prefill_tps(work),
        "decode_tokens_per_s": r.decode_tps(work),
    })
}

/// Prints what the choosers answered for each distinct launch and returns it for the JSON
/// (nothing where no chooser is built in).
fn chooser_report() -> serde_json::Value {
    #[cfg(feature = "tuned")]
    {
        let asked = tuned::asked();
        println!(
            "launches the choosers were asked for ({} distinct):",
            asked.len()
        );
        let mut rows = Vec::new();
        for (a, answer, count) in asked {
            println!(
                "  {} {} {:?} ×{count}: {answer}",
                a.kernel, a.dtype, a.shape
            );
            rows.push(serde_json::json!({
                "kernel": a.kernel, "dtype": a.dtype, "shape": a.shape,
                "answer": answer, "count": count,
            }));
        }
        serde_json::Value::Array(rows)
    }
    #[cfg(not(feature = "tuned"))]
    serde_json::Value::Null
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Args> {
        parse_args(s.split_whitespace().map(String::from))
    }

    #[test]
    fn defaults_are_the_issues_measurement() {
        let a = parse("--model q4k").unwrap();
        assert_eq!(a.kind, Kind::Q4k);
        assert_eq!((a.layers, a.prompt, a.decode, a.runs), (32, 512, 64, 5));
        assert_eq!(a.json, None);
    }

    #[test]
    fn flags_set_their_values() {
        let a =
            parse("--model f16 --layers 2 --prompt 16 --decode 4 --runs 1 --json x.json").unwrap();
        assert_eq!(a.kind, Kind::F16);
        assert_eq!((a.layers, a.prompt, a.decode, a.runs), (2, 16, 4, 1));
        assert_eq!(a.json.as_deref(), Some("x.json"));
    }

    #[test]
    fn bad_command_lines_say_what_is_wrong() {
        let e = |s| format!("{:#}", parse(s).unwrap_err());
        assert!(e("--layers 2").contains("--model is required"));
        assert!(e("--model q8").contains("unknown model"));
        assert!(e("--model bf16 --runs x").contains("not a whole number"));
        assert!(e("--model bf16 --runs").contains("needs a value"));
        assert!(e("--model bf16 --runs 0").contains("at least 1"));
        assert!(e("--model bf16 --frobnicate 1").contains("unknown flag"));
        assert!(e("--model bf16 --prompt 4090 --decode 64").contains("4096 positions"));
    }

    #[test]
    fn this_build_says_which_candle_it_has() {
        let want = if cfg!(feature = "tuned") {
            "tuned"
        } else if env!("CARGO_PKG_NAME").ends_with("-tuned") {
            "patched"
        } else {
            "released"
        };
        assert_eq!(build(), want);
    }
}
