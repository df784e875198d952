#!/usr/bin/env python3
"""Runs the walk-through of README.md's "Train on your own text" as written and checks that the
program still prints what the README shows: every figure of a training line (consumed samples,
learning rate, lm loss, loss scale, grad norm, skipped, validation and test loss and perplexity)
equal as text, and every other line with its elisions ("...") and timings left free.

  check_readme_run.py ROOT ZEROTRON

The commands run in a scratch directory where build/bin/zerotron is ZEROTRON and launch/ is
ROOT's. Exits 77 (skipped) without Debian's fortunes, the walk-through's corpus, and on a CPU
whose ISA is not the README machine's: its GEMMs sum in another order, so the last digits differ.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The CPU ISA (`zerotron --version`) of the machine that printed the README's figures.
README_ISA = "avx512_core_bf16"
FIGURES = ("consumed samples", "learning rate", "lm loss", "loss scale", "grad norm", "skipped",
           "lm loss value", "lm loss PPL")
OUTPUT = re.compile(r"^( iteration| validation| test| saved| loaded|zerotron: |train-tokenizer:|"
                    r"prepare-data:)")


def section(readme, title):
    text = readme.split("\n## " + title + "\n", 1)[1]
    return text.split("\n## ", 1)[0]


def fenced(text):
    return re.findall(r"^```\n(.*?)^```$", text, re.S | re.M)


def steps(text):
    """[(commands, expected output lines)] in README order."""
    out = []
    for block in fenced(text):
        lines = block.rstrip("\n").split("\n")
        if lines[0].startswith("$ "):  # a transcript: commands after "$ ", output below them
            cmds, expect, cont = [], [], False
            for line in lines:
                if line.startswith("$ ") or cont:
                    cmds.append(line[2:] if line.startswith("$ ") else line)
                    cont = line.endswith("\\")
                else:
                    expect.append(line)
            out.append(("\n".join(cmds), expect))
        elif OUTPUT.match(lines[0]) and out:
            out[-1] = (out[-1][0], out[-1][1] + lines)
        else:
            out.append((block, []))
    return out


def figures(line):
    return {k: v for k, v in re.findall(r"(" + "|".join(FIGURES) + r"): (\S+)", line)}


def kind(line):
    m = re.match(r"\s*(iteration\s+\d+/\s*\d+|validation loss at iteration \d+|"
                 r"test loss at iteration \d+)", line)
    return re.sub(r"\s+", " ", m.group(1)) if m else None


def pattern(line):
    parts = re.split(r"(\.\.\.|\(\d+(?:\.\d+)? s\))", line.strip())
    free = {"...": ".*"}
    return re.compile("".join(free.get(p, r"\(\d+(?:\.\d+)? s.*\)" if p.startswith("(") and
                                       p.endswith(" s)") else re.escape(p)) for p in parts))


def check(expect, actual, problems):
    got = actual.split("\n")
    for line in expect:
        k = kind(line)
        if k and figures(line):
            same = [g for g in got if kind(g) == k]
            if not same:
                problems.append(f"no line '{k}' in the output; README: {line.strip()}")
                continue
            want, have = figures(line), figures(same[0])
            diff = {f: (v, have.get(f)) for f, v in want.items() if have.get(f) != v}
            if diff:
                problems.append(f"{k}: README shows {want}, the program prints {have}")
        elif not any(pattern(line).fullmatch(g.strip()) for g in got):
            problems.append(f"README line not printed: {line.strip()}")


def main():
    root, zt = sys.argv[1], os.path.abspath(sys.argv[2])
    if not os.path.isdir("/usr/share/games/fortunes"):
        print("skipped: /usr/share/games/fortunes (Debian's fortunes) is not installed")
        sys.exit(77)
    isa = re.search(r"^cpu isa: (\S+)", subprocess.run([zt, "--version"], capture_output=True,
                                                      text=True).stdout, re.M)
    if not isa or isa.group(1) != README_ISA:
        print(f"skipped: the README's figures are {README_ISA}'s, this CPU is "
              f"{isa.group(1) if isa else 'unknown'}")
        sys.exit(77)
    readme = open(os.path.join(root, "README.md")).read()
    work = tempfile.mkdtemp(prefix="zt_readme_")
    os.makedirs(os.path.join(work, "build", "bin"))
    os.symlink(zt, os.path.join(work, "build", "bin", "zerotron"))
    os.symlink(os.path.join(os.path.abspath(root), "launch"), os.path.join(work, "launch"))
    problems, shell = [], ""
    for n, (cmds, expect) in enumerate(steps(section(readme, "Train on your own text"))):
        # One shell per step, after the definitions of the steps before it (D=..., M=...).
        script = shell + "set -e\n" + cmds + "\n"
        p = subprocess.run(["bash", "-c", script], cwd=work, capture_output=True, text=True,
                           timeout=600)
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            sys.exit(f"FAIL: step {n} exited {p.returncode}:\n{cmds}")
        shell += "".join(d + "\n" for d in re.findall(r'(?ms)^[A-Z]+="[^"]*"', cmds))
        print(f"step {n}: {len(expect)} README line(s) checked")
        check(expect, p.stdout + p.stderr, problems)
    shutil.rmtree(work, ignore_errors=True)
    for line in problems:
        print("FAIL:", line)
    if problems:
        sys.exit(1)
    print("PASS: README's walk-through prints the figures it shows")


if __name__ == "__main__":
    main()
