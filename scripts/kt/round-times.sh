#!/bin/sh
# The time of a proposal round of `surrogate` at 20,000 points (issue 49: well under a second),
# median and slowest over a 400-evaluation run: the default settings, uniform random picks, niche rounds.
# Timings are printed, never asserted: scripts/kt/round-times.sh [extra cargo test args]
set -e
cd "$(dirname "$0")/../.."
exec cargo test --release -p cargo-gputune --lib round_times_at_20000_points "$@" -- --ignored --nocapture
