#!/usr/bin/env bash
# Issue 15's search-cost benchmark: gputune's search (the prebuilt bundles) and Kernel Tuner 1.5
# (brute force, CuPy backend, every configuration verified; kt_tune.py) on the same four kernels,
# spaces and problem sizes. Run on the GPU machine from the repository root, after
# `bash scripts/gpu/build-gpu.sh scale reduce transpose sgemm kt` on a development machine:
#
#   OUT=DIR [RUNS=3] [COLD_RUNS=RUNS] [MODES="cold warm"] [AGAIN=2] [FULL=1] [FULL_ARGS=…] bash .gpu/gpu-vs-kt.sh [PROBLEM…]
#
# PROBLEM: scale reduce transpose sgemm conv rowsum gemv histogram hostloop (default: the first
# four; the others were written later, and the search's defaults were not tuned on them: histogram,
# written for issue 24, was first measured with the defaults as they stood). hostloop (issue 47,
# after `build-gpu.sh hostloop kt`) is examples/hostloop, an SGEMM and a first-pass sum whose
# inputs are made by host loops: one search of both functions (.gpu/hostloop-bundle) against
# kt_tune.py's sgemm then reduce in one timed run (kt-R.sgemm.json, kt-R.reduce.json), the same
# kernels, spaces and problems. Per problem, RUNS runs of each tool,
# alternating which goes first (gputune in odd runs, Kernel Tuner in even ones), each timed wall
# to wall as a whole process:
# - gputune: `cargo-gputune run-bundle .gpu/PROBLEM-bundle` into a fresh store
#   ($OUT/PROBLEM/gputune-R.db) with a fresh, empty kernel cache (GPUTUNE_KERNEL_CACHE), then
#   `report --top 1000 --format json` (gputune-R.report.json);
# - Kernel Tuner: `python3 .gpu/kt_tune.py PROBLEM` (Python's start, imports and data
#   included) with a fresh, empty CuPy kernel cache (CUPY_CACHE_DIR), writing kt-R.json (for
#   hostloop: kt_tune.py sgemm, then reduce, one timed run, writing kt-R.sgemm.json and
#   kt-R.reduce.json).
# That is the cold mode: neither tool has anything compiled. The warm mode (MODES has `warm`)
# first runs each tool once untimed (warm-up-gputune, warm-up-kt) to fill its compile cache
# (gputune's $out/kernels-warm, CuPy's $out/cupy-warm), then RUNS timed runs of each with those
# caches kept (gputune-warm-R into a fresh store each time, kt-warm-R): what a user sees when
# tuning again after an edit elsewhere, and Kernel Tuner's best case. With both modes, the last
# cold run is the warm-up (its caches are the warm mode's, emptied before it). COLD_RUNS sets
# the cold mode's runs apart (Kernel Tuner compiling CUB kernels one at a time takes minutes).
# Wall times go to $OUT/PROBLEM/times.txt, logs next to them. AGAIN=K adds K more gputune
# searches (again-1.db …), not timed against Kernel Tuner: with the RUNS ones they are the runs
# of the tie check (a point identical to base must never read faster or slower than base). With FULL=1, also one reference
# search per problem (`run-bundle .gpu/PROBLEM-bundle $FULL_ARGS`) into $OUT/PROBLEM/full.db:
# the quality guard's best time.
# Finally summarize-vs-kt.py writes $OUT/summary.md and prints it.
set -uo pipefail
export OUT=${OUT:?set OUT to the folder for the results}
runs=${RUNS:-3}
here=$(dirname "$0")
problems=${*:-scale reduce transpose sgemm}
site=/tmp/site

# Kernel Tuner and the dependencies the GPU machine lacks, from the wheels build-gpu.sh's kt
# part downloaded (the GPU machine has no network): numpy and CuPy are the machine's own.
mkdir -p "$OUT"
rm -rf "$site"
python3 -m pip install -q --no-index --no-deps --target "$site" "$here"/whl/*.whl \
  || { echo "cannot install the wheels in $here/whl (run build-gpu.sh's kt part)" >&2; exit 2; }
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
if ! python3 -c 'import kernel_tuner, cupy, numpy' 2> "$OUT/import-error.txt"; then
  echo "Kernel Tuner, CuPy or numpy does not import:" >&2
  cat "$OUT/import-error.txt" >&2
  exit 2
fi
rm -f "$OUT/import-error.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c 'import sys, numpy, cupy, kernel_tuner
print("python", sys.version.split()[0], "numpy", numpy.__version__, "cupy", cupy.__version__,
      "kernel_tuner", getattr(kernel_tuner, "__version__", "?"))' > "$OUT/versions.txt" 2>&1

# name, log, command…: runs the command with its output in the log, timed wall to wall, and
# appends "name exit=RC wall_s=S" to times.txt.
timed() {
  local name=$1 log=$2 t0 t1 rc
  shift 2
  t0=$(date +%s.%N)
  "$@" > "$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  echo "$name exit=$rc wall_s=$(python3 -c "print(f'{$t1 - $t0:.3f}')")" | tee -a "$out/times.txt"
}

# name, bundle, extra run-bundle arguments…: one search into a fresh $out/name.db, then its
# JSON report. The kernel cache is $KERNELS when set (kept: the warm mode), else an empty one
# removed afterwards (the cold mode).
gputune_search() {
  local name=$1 bundle=$2 cache=${KERNELS:-$out/kernels-$1}
  shift 2
  rm -f "$out/$name.db" "$out/$name.db-wal" "$out/$name.db-shm" "$out/$name.lock"
  [ -n "${KERNELS:-}" ] || rm -rf "$cache"
  timed "$name" "$out/$name.log" env GPUTUNE_KERNEL_CACHE="$cache" \
    "$bundle/cargo-gputune" run-bundle "$bundle" "$@" --db "$out/$name.db"
  "$bundle/cargo-gputune" report --db "$out/$name.db" --top 1000 --format json \
    > "$out/$name.report.json" 2> "$out/$name.report.err"
  [ -n "${KERNELS:-}" ] || rm -rf "$cache"
}

# run name: Kernel Tuner with CuPy's kernel cache at $CUPY_WARM when set (kept: the warm mode),
# else an empty one removed afterwards (CuPy keeps compiled kernels on disk across processes;
# a warm one spares later runs their compilations).
kt_search() {
  local name=kt-$1 cache=${CUPY_WARM:-$out/cupy-kt-$1}
  [ -n "${CUPY_WARM:-}" ] || rm -rf "$cache"
  if [ "$problem" = hostloop ]; then
    # Kernel Tuner's peers of the two functions, one after the other, timed as one run; it
    # fails if either does.
    timed "$name" "$out/$name.log" env CUPY_CACHE_DIR="$cache" bash -c \
      'rc=0; for p in sgemm reduce; do python3 "$1" "$p" --src "$2" --json "$3.$p.json" || rc=1; done; exit $rc' \
      kt-hostloop "$here/kt_tune.py" "$here/kt-src" "$out/$name"
  else
    timed "$name" "$out/$name.log" env CUPY_CACHE_DIR="$cache" \
      python3 "$here/kt_tune.py" "$problem" --src "$here/kt-src" --json "$out/$name.json"
  fi
  [ -n "${CUPY_WARM:-}" ] || rm -rf "$cache"
}

# The runs of one mode: $2 runs of each tool, alternating which goes first; $1 is the run
# names' infix (empty for cold, `warm-` for warm). When both modes run, the last cold run starts
# from the warm mode's caches emptied, so it is the warm mode's warm-up (and timed as cold).
runs_of_mode() {
  local infix=$1 count=$2 r k c
  for r in $(seq 1 "$count"); do
    k=${KERNELS:-} c=${CUPY_WARM:-}
    if [ -z "$infix" ] && [ "$r" = "$count" ] && [ "$warm" = 1 ]; then
      rm -rf "$out/kernels-warm" "$out/cupy-warm"
      k=$out/kernels-warm c=$out/cupy-warm
    fi
    if [ $((r % 2)) = 1 ]; then
      KERNELS=$k gputune_search "gputune-$infix$r" "$bundle"
      CUPY_WARM=$c kt_search "$infix$r"
    else
      CUPY_WARM=$c kt_search "$infix$r"
      KERNELS=$k gputune_search "gputune-$infix$r" "$bundle"
    fi
  done
}
modes=${MODES:-cold warm}
cold=0 warm=0
case " $modes " in *" cold "*) cold=1 ;; esac
case " $modes " in *" warm "*) warm=1 ;; esac

for problem in $problems; do
  bundle=$here/$problem-bundle
  out=$OUT/$problem
  mkdir -p "$out"
  : > "$out/times.txt"
  if [ ! -x "$bundle/cargo-gputune" ]; then
    echo "no bundle $bundle (build-gpu.sh's $problem part): skipping $problem" | tee "$out/errors.txt" >&2
    continue
  fi
  [ "$cold" = 0 ] || runs_of_mode "" "${COLD_RUNS:-$runs}"
  if [ "$warm" = 1 ]; then
    if [ "$cold" = 0 ]; then
      rm -rf "$out/kernels-warm" "$out/cupy-warm"
      KERNELS=$out/kernels-warm gputune_search warm-up-gputune "$bundle"
      CUPY_WARM=$out/cupy-warm kt_search warm-up
    fi
    KERNELS=$out/kernels-warm CUPY_WARM=$out/cupy-warm runs_of_mode warm- "$runs"
    rm -rf "$out/kernels-warm" "$out/cupy-warm"
  fi
  for r in $(seq 1 "${AGAIN:-0}"); do
    gputune_search "again-$r" "$bundle"
  done
  if [ "${FULL:-0}" = 1 ]; then
    # The reference for the quality guard: one more search of the same bundle, meant to
    # measure every variant in full, into full.db (fresh store, empty kernel cache, timed).
    # FULL_ARGS holds the run-bundle flags that make it a full search (`--no-race`); they go
    # right after the bundle directory. Without them the reference is one more default
    # search, and the summary says so when full.db holds raced variants.
    echo "$bundle ${FULL_ARGS:-}" > "$out/full.txt"
    # shellcheck disable=SC2086 # FULL_ARGS is a list of flags
    gputune_search full "$bundle" ${FULL_ARGS:-}
  fi
done

python3 "$here/summarize-vs-kt.py" "$OUT" $problems > "$OUT/summary.md" 2> "$OUT/summary.err"
cat "$OUT/summary.md"
if [ -s "$OUT/summary.err" ]; then cat "$OUT/summary.err" >&2; fi
