#!/usr/bin/env python3
"""Issue 17's strategy benchmark, without a GPU: every strategy replayed (`cargo gputune
replay`, Kernel Tuner's simulation mode) against a recorded store, 20 seeds each, at budgets
given as fractions of the space; prints a markdown table of the median [q1, q3] over the
seeds of the best score found as a fraction of the best recorded, and writes an SVG plot of
the same against the number of evaluations.

  python3 scripts/kt/strategy-bench.py --db STORE [--gputune BIN] [--seeds 20]
      [--budgets 0.005,0.01,0.02,0.03,0.05] [--svg FILE] [--title TEXT]

BIN is a cargo-gputune binary (default: target/release/cargo-gputune, else target/debug/…).
"""
import argparse
import json
import os
import subprocess
import sys

STRATEGIES = ["random", "genetic", "annealing", "surrogate"]
COLOURS = {"random": "#888888", "genetic": "#1f77b4", "annealing": "#2ca02c", "surrogate": "#d62728"}


def replay(gputune, db, strategy, seeds, max_evals):
    out = subprocess.run(
        [gputune, "gputune", "replay", "--db", db, "--strategy", strategy, "--seeds", str(seeds),
         "--max-evals", str(max_evals), "--format", "json"],
        capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"replay {strategy} {max_evals} failed: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    if len(doc["functions"]) != 1:
        sys.exit(f"{db} holds {len(doc['functions'])} recorded functions; give a store of one")
    return doc["functions"][0]


def svg(path, title, space, curves):
    """curves: strategy -> [(evaluations, q1, median, q3)]."""
    w, h, left, right, top, bottom = 720, 440, 70, 170, 40, 50
    xs = [e for c in curves.values() for e, *_ in c]
    lo = min(min(q1 for c in curves.values() for _, q1, _, _ in c), 0.9)
    x_max = max(xs)
    px = lambda e: left + (w - left - right) * e / x_max
    py = lambda f: top + (h - top - bottom) * (1.0 - (f - lo) / (1.0 - lo))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for i in range(6):
        f = lo + (1.0 - lo) * i / 5
        parts.append(f'<line x1="{left}" x2="{w - right}" y1="{py(f):.1f}" y2="{py(f):.1f}" '
                     f'stroke="#eee"/><text x="{left - 6}" y="{py(f) + 4:.1f}" '
                     f'text-anchor="end">{f:.3f}</text>')
    for e in sorted(set(xs)):
        parts.append(f'<text x="{px(e):.1f}" y="{h - bottom + 16}" text-anchor="middle">{e}</text>')
    parts.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">'
                 f'evaluations (of {space} points)</text>')
    parts.append(f'<text x="16" y="{(top + h - bottom) / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {(top + h - bottom) / 2})">best found / best recorded'
                 f' (median, q1–q3 of the seeds)</text>')
    parts.append(f'<line x1="{left}" x2="{w - right}" y1="{py(0.95):.1f}" y2="{py(0.95):.1f}" '
                 f'stroke="#999" stroke-dasharray="4 3"/>')
    for k, (name, c) in enumerate(curves.items()):
        colour = COLOURS.get(name, "black")
        band = [(px(e), py(q3)) for e, _, _, q3 in c] + [(px(e), py(q1)) for e, q1, _, _ in reversed(c)]
        parts.append('<polygon points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in band)
                     + f'" fill="{colour}" fill-opacity="0.12" stroke="none"/>')
        parts.append('<polyline points="' + " ".join(f"{px(e):.1f},{py(m):.1f}" for e, _, m, _ in c)
                     + f'" fill="none" stroke="{colour}" stroke-width="2"/>')
        y = top + 20 + 20 * k
        parts.append(f'<line x1="{w - right + 15}" x2="{w - right + 40}" y1="{y}" y2="{y}" '
                     f'stroke="{colour}" stroke-width="2"/><text x="{w - right + 46}" y="{y + 4}">'
                     f'{name}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--gputune")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budgets", default="0.005,0.01,0.02,0.03,0.05")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--svg")
    ap.add_argument("--title", default="strategies by replay")
    a = ap.parse_args()
    gputune = a.gputune or next((p for p in ("target/release/cargo-gputune", "target/debug/cargo-gputune")
                                 if os.path.exists(p)), None)
    if not gputune:
        sys.exit("no cargo-gputune: build it or pass --gputune")
    probe = replay(gputune, a.db, "random", 1, 1)
    space = probe["space"]
    budgets = sorted({max(1, round(float(b) * space)) for b in a.budgets.split(",")})
    strategies = a.strategies.split(",")
    print(f"{probe['title']}: {space} points, {probe['recorded']} recorded; best "
          f"{probe['best_recorded_variant']} at {probe['best_recorded']:.4f}x base; "
          f"{a.seeds} seeds\n")
    print("| strategy | " + " | ".join(f"{b} evals ({100 * b / space:.1f} %)" for b in budgets) + " |")
    print("|---|" + "---|" * len(budgets))
    curves = {}
    for s in strategies:
        cells, curve = [], []
        for b in budgets:
            f = replay(gputune, a.db, s, a.seeds, b)["fraction"]
            cells.append(f"{f['median']:.3f} [{f['q1']:.3f}, {f['q3']:.3f}]")
            curve.append((b, f["q1"], f["median"], f["q3"]))
        curves[s] = curve
        print(f"| {s} | " + " | ".join(cells) + " |")
    if a.svg:
        svg(a.svg, a.title, space, curves)
        print(f"\nwrote {a.svg}")


if __name__ == "__main__":
    main()
