#!/usr/bin/env python3
"""Regenerates every figure of docs/results/simulate.md, docs/results/planner.md and the README
that comes from `zerotron estimate` / `zerotron simulate`, from the current binary.

Each generated block in those pages sits between `<!-- regen:NAME -->` and `<!-- /regen -->`;
this script reruns the block's command and replaces what is between the markers (a fenced block
with the command and its output, or a markdown table as the command prints it), and stamps each
page's `<!-- regen-stamp -->` line with the commit and the UTC date. The CPU validation of
simulate.md is a measurement and is not rerun here (examples/scaling/validate_cpu.sh).

  examples/scaling/regen_docs.py [--zerotron build/bin/zerotron] [--check]

--check regenerates into memory and exits 1 if a page would change (nothing is written).
Without it, scaling_curves.py also rewrites its CSVs (and PNGs where matplotlib is installed)
under examples/scaling/results/.
"""
import argparse
import datetime
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def blocks(zt):
    """NAME -> (shown command, argv, 'code' | 'raw'), argv run from the repository root."""
    rel = "build/bin/zerotron"  # what the pages show, whichever build ran the commands
    est = ["--num-layers", "40", "--hidden-size", "4096", "--num-attention-heads", "32",
           "--seq-length", "1024", "--vocab-size", "50257", "--world-size", "64",
           "--zero-stage", "3", "--fp16", "--checkpoint-activations", "--device-memory", "32GB"]
    sim = ["--num-layers", "125", "--hidden-size", "8192", "--num-attention-heads", "64",
           "--seq-length", "1024", "--vocab-size", "50257", "--tensor-model-parallel-size", "16",
           "--world-size", "400", "--zero-stage", "2", "--fp16", "--checkpoint-activations",
           "--partition-activations", "--micro-batch-size", "32"]
    # README's two examples: a 1.3B model on 8 ranks (estimate) and on 64 A100s (simulate).
    readme = ["--num-layers", "24", "--hidden-size", "2048", "--num-attention-heads", "16",
              "--seq-length", "1024", "--vocab-size", "50257"]
    readme_est = readme + ["--world-size", "8", "--zero-stage", "3", "--bf16",
                           "--checkpoint-activations", "--device-memory", "80GiB"]
    readme_sim = readme + ["--world-size", "64", "--tensor-model-parallel-size", "8",
                           "--zero-stage", "2", "--bf16", "--checkpoint-activations",
                           "--micro-batch-size", "8", "--cluster", "dgx-a100"]
    py = sys.executable
    return {
        "readme_estimate": (f"{rel} estimate " + " ".join(readme_est),
                            [zt, "estimate"] + readme_est, "code"),
        "readme_simulate": (f"{rel} simulate " + " ".join(readme_sim),
                            [zt, "simulate"] + readme_sim, "code"),
        "published_points": ("examples/scaling/published_points.py",
                             [py, "examples/scaling/published_points.py", "--zerotron", zt],
                             "raw"),
        "estimate": (f"{rel} estimate " + " ".join(est), [zt, "estimate"] + est, "code"),
        "table1": ("examples/scaling/table1.sh", ["examples/scaling/table1.sh", zt], "code"),
        "table2": ("examples/scaling/table2.sh", ["examples/scaling/table2.sh", zt], "code"),
        "simulate": (f"{rel} simulate --cluster dgx2-v100 " + " ".join(sim),
                     [zt, "simulate", "--cluster", "dgx2-v100"] + sim, "code"),
        "scaling_curves": ("examples/scaling/scaling_curves.py --summary",
                           [py, "examples/scaling/scaling_curves.py", "--zerotron", zt,
                            "--summary"], "raw"),
        "pipeline_tables": ("examples/scaling/pipeline_tables.py",
                            [py, "examples/scaling/pipeline_tables.py", "--zerotron", zt], "raw"),
        "paper_runs": ("examples/scaling/paper_runs.py",
                       [py, "examples/scaling/paper_runs.py", "--zerotron", zt], "raw"),
    }


def run(argv):
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"regen_docs: {' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout.rstrip("\n")


def wrap_command(cmd, width=100):
    """The shown command, broken before flags as a shell continuation."""
    words, lines, line = cmd.split(" "), [], "$"
    for w in words:
        if len(line) + 1 + len(w) > width and w.startswith("--"):
            lines.append(line + " \\")
            line = "   "
        line += " " + w
    return "\n".join(lines + [line])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--zerotron", default=os.path.join(ROOT, "build", "bin", "zerotron"))
    p.add_argument("--check", action="store_true")
    args = p.parse_args()
    zt = os.path.abspath(args.zerotron)
    specs = blocks(zt)
    if args.check:
        shown, argv, kind = specs["scaling_curves"]
        specs["scaling_curves"] = (shown, argv + ["--no-write"], kind)
    commit = run(["git", "rev-parse", "--short", "HEAD"])
    # What the binary is built from; the pages and scripts changing is not the binary changing.
    dirty = run(["git", "status", "--porcelain", "--untracked-files=no", "--", "src", "apps",
                 "kernels", "CMakeLists.txt", "cmake"])
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    stamp = (f"<!-- regen-stamp -->Figures between `regen` markers regenerated by "
             f"`examples/scaling/regen_docs.py` from the binary built at {commit}"
             f"{' plus uncommitted changes' if dirty else ''}, {date}.")
    changed = []
    cache = {}
    for page in ("docs/results/simulate.md", "docs/results/planner.md", "README.md"):
        path = os.path.join(ROOT, page)
        with open(path) as f:
            text = f.read()
        new = text

        def replace(m):
            name = m.group(1)
            if name not in specs:
                sys.exit(f"regen_docs: {page}: unknown block '{name}'")
            shown, argv, kind = specs[name]
            if name not in cache:
                cache[name] = run(argv)
            out = cache[name]
            body = (f"```\n{wrap_command(shown)}\n{out}\n```" if kind == "code" else out)
            return f"<!-- regen:{name} -->\n{body}\n<!-- /regen -->"

        new = re.sub(r"<!-- regen:(\w+) -->\n.*?<!-- /regen -->", replace, new, flags=re.S)
        # The stamp changes with every run; --check compares the figures only.
        new_stamped = re.sub(r"<!-- regen-stamp -->.*", lambda m: stamp, new)
        if new != text:
            changed.append(page)
        if not args.check:
            with open(path, "w") as f:
                f.write(new_stamped)
    if args.check:
        if changed:
            print(f"regen_docs: out of date: {', '.join(changed)}")
            return 1
        print("regen_docs: the docs/results and README figures match the binary")
        return 0
    print(f"regen_docs: regenerated docs/results/simulate.md, planner.md, README.md ({commit}, "
          f"{date})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
