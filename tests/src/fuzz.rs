//! A small generated-input engine for the readers' fuzz targets (`tests/tests/fuzz/`), on
//! stable Rust and without a dependency: a seeded generator, byte- and line-level mutators,
//! a time budget, a watchdog for hangs, and a corpus of regressions.
//!
//! Each target is a function from bytes to `Result<(), String>`: `Err` is a property that
//! failed; a panic is a crash. Before generating anything, a target replays every file of
//! `tests/fuzz/regressions/TARGET/` (inputs that once failed), so a fixed bug stays fixed.
//! Then it runs generated inputs until its budget is spent: `GPUTUNE_FUZZ_SECONDS` seconds
//! (default [`CI_SECONDS`], what `cargo test` spends), with `GPUTUNE_FUZZ_SEED` choosing the
//! stream (default: a fixed seed in `cargo test`, so CI is reproducible; `scripts/local/fuzz.sh`
//! passes a fresh one). A failing input is written to the regression folder under its hash,
//! and the test fails naming the file; an input that runs longer than [`HANG_SECONDS`] is
//! written there too, and the process aborts (a hang cannot be unwound).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Seconds a target runs under `cargo test` when `GPUTUNE_FUZZ_SECONDS` is not set.
pub const CI_SECONDS: f64 = 1.5;
/// An input that takes longer than this is a hang.
pub const HANG_SECONDS: u64 = 20;
/// The largest generated input: the readers bound their own work, the engine its inputs.
pub const MAX_INPUT: usize = 1 << 20;

/// SplitMix64: small, seeded, and the same stream on every platform.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A copy of one of `items`.
    pub fn choose<T: Copy>(&mut self, items: &[T]) -> T {
        *self.pick(items)
    }

    /// An integer in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % ((hi - lo) as u64 + 1)) as i64
    }
}

/// Values that break readers more often than random bytes do.
pub const INTERESTING: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "NaN",
    "Infinity",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "4294967296",
    "\"\"",
    "null",
    "true",
    "[]",
    "{}",
    "\u{0}",
    "\u{feff}",
    "\\u0000",
    "\\ud800",
];

/// One random change to `input`: a bit flip, a byte set, bytes inserted or removed, a range
/// duplicated or truncated, a token of `dictionary` (or [`INTERESTING`]) inserted, or a piece
/// of `other` (another seed) spliced in.
pub fn mutate(rng: &mut Rng, input: &mut Vec<u8>, dictionary: &[&str], other: &[u8]) {
    let len = input.len();
    match rng.below(10) {
        0 if len > 0 => {
            let i = rng.below(len);
            input[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            input[i] = rng.next_u64() as u8;
        }
        2 => {
            let i = rng.below(len + 1);
            let n = 1 + rng.below(8);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            input.splice(i..i, bytes);
        }
        3 if len > 0 => {
            let i = rng.below(len);
            let n = 1 + rng.below((len - i).min(32));
            input.drain(i..i + n);
        }
        4 if len > 0 => {
            let i = rng.below(len);
            let n = 1 + rng.below((len - i).min(64));
            let piece = input[i..i + n].to_vec();
            let at = rng.below(input.len() + 1);
            input.splice(at..at, piece);
        }
        5 => input.truncate(rng.below(len + 1)),
        6 | 7 => {
            let token = if dictionary.is_empty() || rng.one_in(3) {
                *rng.pick(INTERESTING)
            } else {
                *rng.pick(dictionary)
            };
            let at = char_boundary(input, rng.below(len + 1));
            input.splice(at..at, token.bytes());
        }
        8 if !other.is_empty() => {
            let i = rng.below(other.len());
            let n = 1 + rng.below((other.len() - i).min(256));
            let at = rng.below(len + 1);
            input.splice(at..at, other[i..i + n].iter().copied());
        }
        _ => {
            // Replace a number with another: readers of numbers meet their edges this way.
            if let Some((s, e)) = number_at(input, rng.below(len + 1)) {
                let token = *rng.pick(INTERESTING);
                input.splice(s..e, token.bytes());
            }
        }
    }
    input.truncate(MAX_INPUT);
}

/// Line-level changes for line-oriented inputs (JSON lines): lines swapped, repeated, cut
/// in the middle, made very long, or given invalid UTF-8.
pub fn mutate_lines(rng: &mut Rng, input: &mut Vec<u8>) {
    let mut lines: Vec<Vec<u8>> = input.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let n = lines.len();
    match rng.below(5) {
        0 if n > 1 => {
            let (a, b) = (rng.below(n), rng.below(n));
            lines.swap(a, b);
        }
        1 if n > 0 => {
            let i = rng.below(n);
            let line = lines[i].clone();
            lines.insert(rng.below(n + 1), line);
        }
        2 if n > 0 => {
            let i = rng.below(n);
            let cut = rng.below(lines[i].len() + 1);
            lines[i].truncate(cut);
        }
        3 if n > 0 => {
            // Oversized: one line repeated into a long one (bounded by MAX_INPUT).
            let i = rng.below(n);
            let piece = lines[i].clone();
            let times = 1 + rng.below(64);
            for _ in 0..times {
                if lines[i].len() + piece.len() > MAX_INPUT / 2 {
                    break;
                }
                lines[i].extend_from_slice(&piece);
            }
        }
        _ if n > 0 => {
            let i = rng.below(n);
            let at = rng.below(lines[i].len() + 1);
            let bad: &[u8] = rng.choose(&[&[0xff][..], &[0xc3][..], &[0xed, 0xa0, 0x80][..]]);
            lines[i].splice(at..at, bad.iter().copied());
        }
        _ => {}
    }
    *input = lines.join(&b'\n');
    input.truncate(MAX_INPUT);
}

fn char_boundary(input: &[u8], mut i: usize) -> usize {
    // Inside a UTF-8 sequence a token would only add invalid bytes, which byte mutations
    // already do; at a boundary it keeps a text input text.
    while i > 0 && i < input.len() && (input[i] & 0xC0) == 0x80 {
        i -= 1;
    }
    i
}

fn number_at(input: &[u8], at: usize) -> Option<(usize, usize)> {
    let digit = |b: u8| b.is_ascii_digit() || b == b'.' || b == b'-' || b == b'e';
    let start = (at..input.len()).find(|&i| input[i].is_ascii_digit())?;
    let mut s = start;
    while s > 0 && digit(input[s - 1]) {
        s -= 1;
    }
    let mut e = start;
    while e < input.len() && digit(input[e]) {
        e += 1;
    }
    Some((s, e))
}

/// A stable name for an input: FNV-1a of its bytes.
pub fn hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The folder of a target's regression inputs.
pub fn regressions(target: &str) -> PathBuf {
    crate::root().join("tests/fuzz/regressions").join(target)
}

/// The seed inputs of a target (`tests/fuzz/seeds/TARGET/*`), sorted by name.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    files(&crate::root().join("tests/fuzz/seeds").join(target))
}

fn files(dir: &Path) -> Vec<Vec<u8>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    paths.sort();
    paths
        .into_iter()
        .filter(|p| p.is_file())
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

/// How long targets run: `GPUTUNE_FUZZ_SECONDS`, else [`CI_SECONDS`].
pub fn budget() -> Duration {
    let secs = std::env::var("GPUTUNE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(CI_SECONDS);
    Duration::from_secs_f64(secs)
}

/// The generator's seed: `GPUTUNE_FUZZ_SEED`, else a fixed one (reproducible CI).
pub fn seed() -> u64 {
    std::env::var("GPUTUNE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6770_7574_756e_6521)
}

/// What a target did.
#[derive(Debug, Clone, Copy)]
pub struct Ran {
    /// Generated inputs run (regressions not counted).
    pub inputs: u64,
    /// Regression inputs replayed first.
    pub replayed: usize,
}

/// Runs `target`: every regression input, then inputs from `generate` until the budget is
/// spent, each through `check`. Prints one line with the counts.
pub fn run(
    target: &str,
    mut generate: impl FnMut(&mut Rng) -> Vec<u8>,
    check: impl Fn(&[u8]) -> Result<(), String>,
) -> Ran {
    let dir = regressions(target);
    let old = files(&dir);
    for input in &old {
        if let Err(why) = run_one(&check, input) {
            panic!("fuzz {target}: a regression input fails again: {why}");
        }
    }
    let budget = budget();
    let started = Instant::now();
    let current: Arc<Mutex<Vec<u8>>> = Arc::default();
    let ticks = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let watchdog = {
        let (current, ticks, done, dir) =
            (current.clone(), ticks.clone(), done.clone(), dir.clone());
        let target = target.to_string();
        std::thread::spawn(move || watch(&target, &dir, &current, &ticks, &done))
    };
    let mut rng = Rng(seed() ^ u64::from_str_radix(&hash(target.as_bytes()), 16).unwrap_or(0));
    let mut inputs = 0u64;
    while started.elapsed() < budget || inputs == 0 {
        let input = generate(&mut rng);
        if let Ok(mut c) = current.lock() {
            c.clone_from(&input);
        }
        ticks.fetch_add(1, Ordering::SeqCst);
        let outcome = run_one(&check, &input);
        inputs += 1;
        if let Err(why) = outcome {
            done.store(1, Ordering::SeqCst);
            let path = save(&dir, &input);
            panic!(
                "fuzz {target}: input {inputs} fails: {why}\n(kept as {}; it is replayed first \
                 from now on)",
                path.display()
            );
        }
    }
    done.store(1, Ordering::SeqCst);
    let _ = watchdog.join();
    println!(
        "fuzz {target}: {inputs} inputs in {:.1} s (seed {}), {} regression inputs replayed",
        started.elapsed().as_secs_f64(),
        seed(),
        old.len()
    );
    Ran {
        inputs,
        replayed: old.len(),
    }
}

fn run_one(check: &impl Fn(&[u8]) -> Result<(), String>, input: &[u8]) -> Result<(), String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(input))) {
        Ok(result) => result,
        Err(panic) => Err(format!(
            "panicked: {}",
            panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)")
        )),
    }
}

fn save(dir: &Path, input: &[u8]) -> PathBuf {
    let path = dir.join(hash(input));
    let _ = std::fs::create_dir_all(dir);
    let _ = std::fs::write(&path, input);
    path
}

/// Aborts the process, keeping the input, when one input runs past [`HANG_SECONDS`].
fn watch(target: &str, dir: &Path, current: &Mutex<Vec<u8>>, ticks: &AtomicU64, done: &AtomicU64) {
    let mut last = (ticks.load(Ordering::SeqCst), Instant::now());
    while done.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(200));
        let now = ticks.load(Ordering::SeqCst);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(HANG_SECONDS) {
            let input = current.lock().map(|c| c.clone()).unwrap_or_default();
            let path = save(dir, &input);
            eprintln!(
                "fuzz {target}: an input ran for more than {HANG_SECONDS} s (a hang); kept as {}",
                path.display()
            );
            std::process::abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_seeded_and_mutations_stay_bounded() {
        let (mut a, mut b) = (Rng(7), Rng(7));
        assert_eq!(
            (0..5).map(|_| a.next_u64()).collect::<Vec<_>>(),
            (0..5).map(|_| b.next_u64()).collect::<Vec<_>>()
        );
        let mut input = b"{\"a\": 12, \"b\": [1, 2]}\n{\"c\": 3}".to_vec();
        for _ in 0..10_000 {
            mutate(&mut a, &mut input, &["x"], b"other");
            mutate_lines(&mut a, &mut input);
            assert!(input.len() <= MAX_INPUT);
        }
    }

    #[test]
    fn a_failing_check_is_reported_with_its_input_kept() {
        let target = format!("engine-self-test-{}", std::process::id());
        let result = std::panic::catch_unwind(|| {
            run(
                &target,
                |_| b"boom".to_vec(),
                |i| {
                    if i == b"boom" {
                        panic!("found it")
                    }
                    Ok(())
                },
            )
        });
        let message = result
            .err()
            .and_then(|p| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        assert!(message.contains("found it"), "{message}");
        let kept = regressions(&target).join(hash(b"boom"));
        assert_eq!(std::fs::read(&kept).ok().as_deref(), Some(&b"boom"[..]));
        let _ = std::fs::remove_dir_all(regressions(&target));
    }
}
