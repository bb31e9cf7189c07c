#!/usr/bin/env bash
# Builds what scripts/gpu/gpu-devices.sh runs (issue 46) into .gpu/h46/ (ignored by git; carry
# it to the GPU machine): the 64-point SGEMM (sgemm-bundle), the histogram at 2^16, 2^20, 2^23
# and 2^26 keys (histogram-sizes-bundle) and the 16,020-point SGEMM space built whole
# (large-bundle), at default settings, with one release cargo-gputune beside them (the
# bundles' own copies are removed: the three would take 33 MB of the 64 MiB that travels).
set -euo pipefail
cd "$(dirname "$0")/../.."
h=.gpu/h46
mkdir -p "$h"
cargo build --release --quiet -p cargo-gputune
# A copy of its own: another build of the shared target folder may replace the release binary
# while the bundles are built (a bundle copies the binary that builds it).
cp "$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/release/cargo-gputune" \
  "$h/cargo-gputune"
gputune=$PWD/$h/cargo-gputune
bundle() { # directory, then the search's arguments
  local dir=$1
  shift
  rm -rf "$dir"
  "$gputune" gputune "$@" --build-only --bundle "$dir"
  rm -f "$dir/cargo-gputune"
}
for part in ${*:-sgemm histogram large}; do
  case $part in
    sgemm) bundle "$h/sgemm-bundle" -p gputune-example-sgemm-cuda search ;;
    histogram) bundle "$h/histogram-sizes-bundle" -p gputune-example-histogram-cuda search \
      -a 'Keys{io}[pow2]=[16,20,23,26]' ;;
    large) bundle "$h/large-bundle" -p gputune-example-sgemm-large search --batch-size 20000 ;;
    *) echo "unknown part $part (sgemm, histogram, large)" >&2; exit 2 ;;
  esac
done
strip "$h/cargo-gputune" 2> /dev/null || true
du -sh "$h"
