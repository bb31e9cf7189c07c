#!/usr/bin/env python3
"""Why Kernel Tuner's grey wolves lead on GEMM at 50 evaluations: a control for issue 25.

  python3 scripts/kt/kt-value-order.py SPACE [--strategy adaptive_tabu_greywolf] [--budget 50]
      [--seeds 128] [--order listed|reversed] [--random-repair] [--data DIR]

Runs one Kernel Tuner 1.5 strategy in simulation mode on one space of ../shared/data/kt-spaces
over seeds 0..N-1, exactly as scripts/kt/strategy-vs-kt.py does, and prints the median, quartiles and
each seed's fraction of the optimum.

- `--order reversed` lists each parameter's values to Kernel Tuner in reverse: the same space and
  the same adjacency, which Kernel Tuner then enumerates from the other end.
- `--random-repair` (adaptive_tabu_greywolf only) makes the grey wolves repair a child outside the
  space to a random valid neighbour instead of the first one in Kernel Tuner's enumeration.

Kernel Tuner enumerates a space from the last value of each parameter's list. For caches whose
lists ascend, that is the largest tiles, with SA and SB on, first. `AdaptiveTabuGreyWolf.repair`
returns the first valid neighbour, so every repaired child leans towards that end of the space.
On GEMM that end is where the optimum is.
"""
import argparse
import gzip
import os
import random
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load_benchmark():
    """scripts/kt/strategy-vs-kt.py as a module (its name is not an identifier)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("strategy_vs_kt",
                                                  os.path.join(HERE, "strategy-vs-kt.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def random_repair():
    """Replaces the grey wolves' repair: a random valid neighbour, by the same methods in turn."""
    import kernel_tuner.strategies.gen_adaptive_tabu_greywolf as wolves

    def repair(self, sol):
        if not self.constraint_aware or self.searchspace.is_param_config_valid(tuple(sol)):
            return sol
        for method in ("adjacent", "Hamming", "strictly-adjacent"):
            valid = [nb for nb in self.searchspace.get_neighbors(tuple(sol), neighbor_method=method)
                     if self.searchspace.is_param_config_valid(nb)]
            if valid:
                return list(random.choice(valid))
        return self.sample_valid()

    if not hasattr(wolves.AdaptiveTabuGreyWolf, "repair"):
        sys.exit("this Kernel Tuner's AdaptiveTabuGreyWolf has no repair method to replace")
    wolves.AdaptiveTabuGreyWolf.repair = repair


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("space")
    ap.add_argument("--strategy", default="adaptive_tabu_greywolf")
    ap.add_argument("--budget", type=int, default=50)
    ap.add_argument("--seeds", type=int, default=128)
    ap.add_argument("--order", choices=["listed", "reversed"], default="listed")
    ap.add_argument("--random-repair", action="store_true")
    ap.add_argument("--data", default=os.path.normpath(
        os.path.join(HERE, "..", "..", "..", "shared", "data", "kt-spaces")))
    a = ap.parse_args()
    if a.random_repair:
        if a.strategy != "adaptive_tabu_greywolf":
            sys.exit("--random-repair replaces adaptive_tabu_greywolf's repair only")
        random_repair()
    bench = load_benchmark()
    source = os.path.join(a.data, a.space + ".json.gz")
    if not os.path.exists(source):
        sys.exit(f"no space {a.space}: {source} does not exist")
    tmp = tempfile.mkdtemp(prefix="kt-value-order-")
    try:
        path = os.path.join(tmp, a.space + ".json")
        with gzip.open(source, "rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        fractions = [bench.kt_run((a.space, a.strategy, a.budget, seed, path, a.order))["fraction"]
                     for seed in range(a.seeds)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    q1, median, q3 = bench.quartiles(fractions)
    print(f"{a.space} {a.strategy} at {a.budget} evaluations, values {a.order}"
          + (", random repair" if a.random_repair else "")
          + f": median {median:.3f} [{q1:.3f}, {q3:.3f}] over {a.seeds} seeds")
    print(" ".join(f"{f:.3f}" for f in fractions))


if __name__ == "__main__":
    main()
