#!/usr/bin/env bash
# Issue 46: what a guided search of the large SGEMM space costs on one GPU once every kernel of
# the space is compiled: one exhaustive run fills the kernel cache (not timed against anything),
# then `--strategy surrogate --max-evals 200` with seeds 1–5, each into a fresh store. What is
# left is what a second GPU could share: the logs' last lines split each run's time.
#
#   OUT=DIR bash scripts/gpu/gpu-guided-cached.sh [H46=.gpu/h46]   (bundles: build-devices.sh large)
#
# times.txt: "name rc=RC SECONDS"; per run its log and `report --top 3`.
set -u
out=${OUT:?set OUT to the folder for the results}
h=${H46:-.gpu/h46}
g=$h/cargo-gputune
export GPUTUNE_KERNEL_CACHE=${GPUTUNE_KERNEL_CACHE:-/tmp/gputune-kernels}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$out/gpu.txt"
nproc >> "$out/gpu.txt"
now() { date +%s.%N; }
since() { python3 -c "print(round($(now) - $1, 3))"; }
s=$(now)
"$g" run-bundle "$h/large-bundle" --db /tmp/cache.db > "$out/cache.log" 2>&1
echo "cache rc=$? $(since "$s")" >> "$out/times.txt"
"$g" report --db /tmp/cache.db --top 3 > "$out/cache.report.txt" 2>&1
for i in 1 2 3 4 5; do
  s=$(now)
  "$g" run-bundle "$h/large-bundle" --db "/tmp/g$i.db" --strategy surrogate --max-evals 200 \
    --seed "$i" > "$out/guided-$i.log" 2>&1
  echo "guided-$i rc=$? $(since "$s")" >> "$out/times.txt"
  "$g" report --db "/tmp/g$i.db" --top 3 > "$out/guided-$i.report.txt" 2>&1
done
cat "$out/times.txt"
