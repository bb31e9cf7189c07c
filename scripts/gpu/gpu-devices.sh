#!/usr/bin/env bash
# Issue 46 on a two-GPU machine: one search over both GPUs (`run-bundle --devices 0,1`) against
# one GPU of the same machine (`run-bundle`, device 0), each run into a fresh store, medians of 3,
# the kernel cache warmed by a first run of each bundle (not counted). Build the bundles first
# (on a development machine):
#
#   bash scripts/gpu/build-devices.sh            # .gpu/h46/: sgemm, histogram-sizes, large, one cargo-gputune
#   OUT=DIR bash scripts/gpu/gpu-devices.sh [H46=.gpu/h46] [PARTS="sgemm histogram guided fault large"; also cache] \
#     [DEVICES=0,1]
#
# DEVICES is the search over several GPUs (0,1,2,3 on a four-GPU machine); runs over N GPUs are
# named NAME-Ngpu-I.
#
# The parts run in that order, the short searches the large one does not stand for first; a run
# that would start past BUDGET seconds (380) from the script's start is skipped and says so in
# times.txt ("name skipped"), so that the whole fits one device call of 10 minutes with the
# machine's own start.
#
# - sgemm, histogram: the 64-point SGEMM and the 240-point histogram at four sizes, exhaustive,
#   deciding (the default search).
# - large: the 16,020-point SGEMM space, exhaustive, deciding.
# - guided: the large space, `--strategy surrogate --max-evals 200 --seed 1`.
# - cache: one exhaustive run of the large space over DEVICES, not timed against anything: it
#   compiles every kernel of the space into the kernel cache, so that a guided part after it
#   compiles nothing, whatever its proposals (its warm-up alone leaves the kernels that later
#   runs' proposals ask for and the warm-up's did not).
# - fault: the SGEMM bundle with device 1 lost mid-search: its first bench process killed after
#   FAULT_AFTER seconds (1.0), every later one started with device 1 hidden
#   (CUDA_VISIBLE_DEVICES=-1 where cargo gputune gave it 1: no GPU to open).
# Every second run of a bundle goes into another store than the first: each measures afresh
# (its log's "Done" line says how many results it stored).
# times.txt: "name exit=RC wall_s=S"; summary.md: medians, spreads, speed-ups and winners; each
# run's log and report (--format json; the stores are removed: the large space's are 20 MB each).
set -uo pipefail
out=${OUT:?set OUT to the folder for the results}
h=${H46:-.gpu/h46}
g=$h/cargo-gputune
mkdir -p "$out"
export GPUTUNE_KERNEL_CACHE=$out/kernels
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv > "$out/gpu.txt" 2>&1
nproc >> "$out/gpu.txt"

started=$SECONDS
devices=${DEVICES:-0,1}
many=$(( $(tr -cd , <<< "$devices" | wc -c) + 1 ))
# name, limit, command…: its output in $out/name.log, SIGINT past the limit, or nothing past
# BUDGET; appends to times.txt.
timed() {
  local name=$1 limit=$2 t0 rc
  shift 2
  if (( SECONDS - started + 5 > ${BUDGET:-380} )); then
    echo "$name skipped (past the budget of ${BUDGET:-380} s)" | tee -a "$out/times.txt"
    return 0
  fi
  t0=$(date +%s.%N)
  timeout -s INT -k 20 "$limit" "$@" > "$out/$name.log" 2>&1
  rc=$?
  echo "$name exit=$rc wall_s=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.3f}')")" \
    | tee -a "$out/times.txt"
  return 0
}

# bundle name, limit, extra args…: WARM warm-ups (1), then 1 GPU and 2 GPUs in turn, 3 times
# each.
compare() {
  local b=$1 name=$2 limit=$3 w
  shift 3
  for w in $(seq "${WARM:-1}"); do
    timed "$name-warm$w" "$limit" "$g" run-bundle "$h/$b" --devices "$devices" \
      --db "$out/$name-warm$w.db" "$@"
  done
  for i in 1 2 3; do
    timed "$name-1gpu-$i" "$limit" "$g" run-bundle "$h/$b" --db "$out/$name-1gpu-$i.db" "$@"
    timed "$name-${many}gpu-$i" "$limit" "$g" run-bundle "$h/$b" --devices "$devices" \
      --db "$out/$name-${many}gpu-$i.db" "$@"
  done
  for db in "$out/$name"-*.db; do
    "$g" report --db "$db" --format json --top 1000 > "${db%.db}.report.json" 2> /dev/null
    rm -f "$db"
  done
}

fault() {
  local f=$out/fault-bundle
  rm -rf "$f"
  cp -r "$h/sgemm-bundle" "$f"
  for bin in "$f"/bin/*; do
    case $bin in *-base | *.real) continue ;; esac
    mv "$bin" "$bin.real"
    cat > "$bin" << EOF
#!/bin/sh
# cargo gputune shows each bench process its one GPU (CUDA_VISIBLE_DEVICES=1 for device 1).
case "\$CUDA_VISIBLE_DEVICES" in
  1) ;;
  *) exec "$bin.real" "\$@" ;;
esac
if [ -e "$bin.lost" ]; then
  # The device is gone: the process sees no GPU.
  CUDA_VISIBLE_DEVICES=-1 exec "$bin.real" "\$@"
fi
: > "$bin.lost"
me=\$\$
( sleep ${FAULT_AFTER:-1.0}; kill -9 \$me ) < /dev/null > /dev/null 2>&1 &
exec "$bin.real" "\$@"
EOF
    chmod +x "$bin"
  done
  timed fault 120 "$g" run-bundle "$f" --devices "$devices" --db "$out/fault.db"
  "$g" report --db "$out/fault.db" --format json --top 1000 > "$out/fault.report.json" 2> /dev/null
  rm -f "$out/fault.db"
}

for part in ${PARTS:-sgemm histogram guided fault large}; do
  case $part in
    sgemm) compare sgemm-bundle sgemm 120 ;;
    histogram) compare histogram-sizes-bundle histogram 120 ;;
    fault) fault ;;
    large) compare large-bundle large 120 ;;
    cache)
      timed large-cache 300 "$g" run-bundle "$h/large-bundle" --devices "$devices" \
        --db "$out/large-cache.db"
      rm -f "$out/large-cache.db" ;;
    # Warmed once: a strategy's proposals follow the scores, so a run may still ask for a few
    # kernels the ones before did not compile (its log's compile waits say how long).
    guided) compare large-bundle guided 120 --strategy surrogate --max-evals 200 --seed 1 ;;
  esac
done
python3 "$(dirname "$0")/../summaries/summarize-devices.py" "$out" > "$out/summary.md" 2>&1
cat "$out/summary.md"
rm -rf "$out/kernels" "$out/fault-bundle"
