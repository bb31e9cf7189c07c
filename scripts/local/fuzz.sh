#!/usr/bin/env bash
# Long runs of the generated-input targets of tests/tests/fuzz/ (issue 30): each target for
# SECONDS seconds on a fresh seed, JOBS targets at a time, with a memory limit so that an
# allocation that runs away fails instead of taking the machine.
#
#   bash scripts/local/fuzz.sh [TARGET…]          (default: every target)
#   SECONDS_PER_TARGET=600 JOBS=2 SEED=N MEMORY_MB=4096 bash scripts/local/fuzz.sh
#
# A TARGET is a test's name or a part of it, as `cargo test` filters (`grammar_text`,
# `events`, `import`); the tests sit in one module per family (`grammar::grammar_text`).
#
# Prints one line per target: its test, the inputs it ran, and PASS, or FAIL with the input
# kept under tests/fuzz/regressions/TARGET/ (the engine writes it; `cargo test` replays it from
# then on). A hang aborts the target (the engine's watchdog keeps the input); the outer
# `timeout` is a second guard. Logs go to target/fuzz-logs/.
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=${SECONDS_PER_TARGET:-600}
jobs=${JOBS:-2}
seed=${SEED:-$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')}
memory_mb=${MEMORY_MB:-4096}
all=(grammar_text grammar_space_equals_brute_force_require bench_flags_parse_or_refuse_and_round_trip
     axis_overrides_parse_and_apply_or_refuse jsonl_events_are_read_or_refused
     protocol_documents_are_read_or_refused community_files_import_or_are_refused
     a_corrupt_store_is_an_error_not_a_crash gputune_toml_is_read_or_refused)
targets=("${@:-${all[@]}}")
logs=target/fuzz-logs
mkdir -p "$logs"

cargo test --release -q -p gputune-tests --test fuzz --no-run 2>&1 | tail -3
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, ${jobs} at a time, seed ${seed}, memory ${memory_mb} MB"

run_one() {
  local t=$1 log=$logs/$1.log
  (
    ulimit -v $((memory_mb * 1024))
    GPUTUNE_FUZZ_SECONDS=$seconds GPUTUNE_FUZZ_SEED=$seed RUST_BACKTRACE=1 \
      timeout $((seconds + 300)) cargo test --release -q -p gputune-tests --test fuzz "$t" \
      -- --nocapture --test-threads=1
  ) > "$log" 2>&1
  local rc=$?
  local count
  count=$(grep -aoE 'fuzz [a-z-]+: [0-9]+ inputs in [0-9.]+ s' "$log" | tail -1)
  if [ $rc = 0 ]; then
    echo "PASS $t: ${count:-?}"
  else
    echo "FAIL $t (exit $rc): $(grep -aE 'fails|hang|kept as|memory|panicked' "$log" | head -3 | tr '\n' ' ')"
  fi
}

running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
