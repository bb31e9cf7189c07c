//! Each bench process sees the one GPU it measures on: `cargo gputune` narrows
//! `CUDA_VISIBLE_DEVICES` to the GPU that `--device N` names and passes `--device 0`.
//!
//! Why: the driver initialises every GPU a process can see when the process opens its first.
//! On a host of four H200s (2026-11-28, `scripts/gpu/gpu-open-isolation.sh`) a bench process
//! that saw all four took 1.12 s to open its device, one that saw its own 0.48 s; two at once,
//! 1.26 s against 0.77 s. Every bench process of a search pays this, on one GPU or several, and
//! a GPU the process cannot see is one it cannot use by mistake.
//!
//! The GPU is picked as the bench would have picked it: the parent's `CUDA_VISIBLE_DEVICES`
//! entry at index N (an index, a `GPU-…` UUID or a MIG name alike), or N itself where the
//! parent sets none. Where that is not possible (the parent's list is shorter, or hides every
//! GPU), the process runs as asked and says for itself what it cannot open.

use std::process::Command;

/// The variable CUDA reads the visible GPUs from.
pub(crate) const VISIBLE: &str = "CUDA_VISIBLE_DEVICES";

/// `args` for a process that sees only the GPU its `--device N` names (0 without one):
/// the same flags with `--device 0`, and the value of [`VISIBLE`] that shows that GPU alone.
/// `parent` is the caller's own [`VISIBLE`]. `None` where the GPU cannot be named.
pub(crate) fn narrowed(args: &[String], parent: Option<&str>) -> Option<(Vec<String>, String)> {
    let at = args.iter().position(|a| a == "--device");
    let ordinal: usize = match at {
        Some(i) => args.get(i + 1)?.parse().ok()?,
        None => 0,
    };
    let visible = match parent {
        None => ordinal.to_string(),
        Some(list) => {
            let entries: Vec<&str> = list.split(',').map(str::trim).collect();
            // CUDA ignores what follows an invalid entry; an empty or negative one hides all.
            if entries.iter().any(|e| e.is_empty() || e.starts_with('-')) {
                return None;
            }
            entries.get(ordinal)?.to_string()
        }
    };
    let mut args = args.to_vec();
    if let Some(i) = at {
        args[i + 1] = "0".to_string();
    }
    Some((args, visible))
}

/// Adds `args` to `cmd`, narrowed to one GPU where it can be ([`narrowed`]).
pub(crate) fn add_args(cmd: &mut Command, args: &[String]) {
    let parent = std::env::var(VISIBLE).ok();
    match narrowed(args, parent.as_deref()) {
        Some((args, visible)) => {
            cmd.args(args).env(VISIBLE, visible);
        }
        None => {
            cmd.args(args);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_named_gpu_becomes_the_only_one_and_device_0() {
        let (a, v) =
            narrowed(&args(&["-b", "x", "--device", "2", "--jsonl", "f"]), None).expect("narrowed");
        assert_eq!(a, args(&["-b", "x", "--device", "0", "--jsonl", "f"]));
        assert_eq!(v, "2");
        // No --device is device 0.
        let (a, v) = narrowed(&args(&["-b", "x"]), None).expect("narrowed");
        assert_eq!((a, v.as_str()), (args(&["-b", "x"]), "0"));
    }

    #[test]
    fn the_parents_list_is_indexed_as_the_bench_would_index_it() {
        let a = args(&["--device", "1"]);
        assert_eq!(narrowed(&a, Some("3,2")).expect("narrowed").1, "2");
        assert_eq!(
            narrowed(&a, Some("GPU-aaa, GPU-bbb")).expect("narrowed").1,
            "GPU-bbb"
        );
        // Past the parent's list, or a list that hides GPUs: the process runs as asked.
        assert!(narrowed(&a, Some("3")).is_none());
        assert!(narrowed(&a, Some("-1")).is_none());
        assert!(narrowed(&a, Some("")).is_none());
        // A malformed --device is the bench's to reject.
        assert!(narrowed(&args(&["--device", "x"]), None).is_none());
        assert!(narrowed(&args(&["--device"]), None).is_none());
    }

    #[test]
    fn the_command_gets_the_narrowed_flags_and_variable() {
        let mut cmd = Command::new("true");
        add_args(&mut cmd, &args(&["--device", "1"]));
        let got: Vec<_> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(got, args(&["--device", "0"]));
        let visible = cmd
            .get_envs()
            .find(|(k, _)| *k == VISIBLE)
            .and_then(|(_, v)| v)
            .map(|v| v.to_string_lossy().into_owned());
        let expected = match std::env::var(VISIBLE) {
            Err(_) => Some("1".to_string()),
            Ok(list) => narrowed(&args(&["--device", "1"]), Some(&list)).map(|(_, v)| v),
        };
        assert_eq!(visible, expected);
    }
}
