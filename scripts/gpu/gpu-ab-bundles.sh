#!/usr/bin/env bash
# A/B of two builds of one bundle on the GPU machine, searches alternating, cold (an empty
# kernel cache before each) and warm (kept from an untimed run): each search's wall time and
# its closing line of where the time went.
#   OUT=DIR [RUNS=5] [COLD_RUNS=3] bash .gpu/gpu-ab-bundles.sh A_BUNDLE B_BUNDLE
set -uo pipefail
OUT=${OUT:?}; runs=${RUNS:-5}; cold_runs=${COLD_RUNS:-3}
a=$1 b=$2
mkdir -p "$OUT"
one() { # label, bundle, cache dir
  local t0 t1
  t0=$(date +%s.%N)
  GPUTUNE_KERNEL_CACHE=$3 "$2/cargo-gputune" run-bundle "$2" --db "$OUT/$1.db" > "$OUT/$1.txt" 2>&1
  t1=$(date +%s.%N)
  echo "$1: $(python3 -c "print(f'{$t1 - $t0:.3f}')") s; $(grep -o 'Time to the first.*' "$OUT/$1.txt" | cut -c1-260)"
  rm -f "$OUT/$1.db"*
}
for r in $(seq 1 "$cold_runs"); do
  for side in A B; do
    bundle=$a; [ $side = B ] && bundle=$b
    rm -rf "$OUT/cold-kernels"
    one "cold-$side-$r" "$bundle" "$OUT/cold-kernels"
  done
done
for side in A B; do
  bundle=$a; [ $side = B ] && bundle=$b
  GPUTUNE_KERNEL_CACHE=$OUT/kc-warm-$side "$bundle/cargo-gputune" run-bundle "$bundle" --db "$OUT/untimed-$side.db" > /dev/null 2>&1
done
for r in $(seq 1 "$runs"); do
  for side in A B; do
    bundle=$a; [ $side = B ] && bundle=$b
    one "warm-$side-$r" "$bundle" "$OUT/kc-warm-$side"
  done
done
rm -rf "$OUT"/cold-kernels "$OUT"/kc-* "$OUT"/*.db*
