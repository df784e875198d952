#!/usr/bin/env bash
# llm.c's CPU trainer (train_gpt2.c, fp32, OpenMP) as a peer of zerotron's step at llm.c's own
# shape: GPT-2 124M (12 layers, 768 hidden, 12 heads, vocabulary 50257 padded to 50304), micro
# batch 4, sequence 64, AdamW. Prints one JSON object: the median step time over `steps`
# training steps after the first (which allocates the gradients and optimizer state), and the
# peak RSS.
#
# llm.c is not vendored: pass a checkout. Its main() loads gpt2_124M.bin (written by its
# train_gpt2.py from the Hugging Face weights) and token files; the step time does not depend
# on the values, so this writes a checkpoint in its format with random N(0, 0.02) weights
# (layernorm weights 1) and random token files, in a scratch directory. The copy of
# train_gpt2.c compiled there is patched in its loop only: `steps + 1` steps, no validation
# passes and no sampling (which in the original run between steps, outside the timed region).
# Built with llm.c's own flags (make train_gpt2: -Ofast, -fopenmp -DOMP).
# Usage: bench/peers/llmc_step.sh <llm.c checkout> [steps=5] [threads=2]
set -euo pipefail
src=$(cd "$1" && pwd)
steps=${2:-5}
threads=${3:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/llmc" "$src/Makefile" "$work/"
sed -e "s/for (int step = 0; step <= 40; step++)/for (int step = 0; step <= $steps; step++)/" \
    -e 's/if (step % 10 == 0) {/if (0) {/' \
    -e 's/if (step > 0 \&\& step % 20 == 0) {/if (0) {/' "$src/train_gpt2.c" >"$work/train_gpt2.c"
grep -q "step <= $steps; step++" "$work/train_gpt2.c" || { echo "llmc_step: loop not patched" >&2; exit 1; }
(cd "$work" && make train_gpt2 >/dev/null 2>&1)
python3 - "$work" <<'PY'
import sys
from pathlib import Path
import numpy as np
work = Path(sys.argv[1])
maxT, V, Vp, L, NH, C = 1024, 50257, 50304, 12, 12, 768
header = np.zeros(256, dtype=np.int32)
header[:8] = [20240326, 3, maxT, V, L, NH, C, Vp]
# Parameter tensors in train_gpt2.c's order (fill_in_parameter_sizes); layernorm weights are 1.
shapes = [(Vp * C, 0), (maxT * C, 0), (L * C, 1), (L * C, 2), (L * 3 * C * C, 0), (L * 3 * C, 2),
          (L * C * C, 0), (L * C, 2), (L * C, 1), (L * C, 2), (L * 4 * C * C, 0), (L * 4 * C, 2),
          (L * C * 4 * C, 0), (L * C, 2), (C, 1), (C, 2)]
rng = np.random.default_rng(1234)
with open(work / "gpt2_124M.bin", "wb") as f:
    header.tofile(f)
    for n, kind in shapes:
        x = (rng.standard_normal(n, dtype=np.float32) * 0.02 if kind == 0 else
             np.ones(n, np.float32) if kind == 1 else np.zeros(n, np.float32))
        x.tofile(f)
d = work / "dev/data/tinyshakespeare"
d.mkdir(parents=True)
for name, ntok in (("train", 400_000), ("val", 40_000)):
    h = np.zeros(256, dtype=np.int32)
    h[:3] = [20240520, 1, ntok]
    with open(d / f"tiny_shakespeare_{name}.bin", "wb") as f:
        h.tofile(f)
        rng.integers(0, V, ntok, dtype=np.uint16).tofile(f)
PY
(cd "$work" && OMP_NUM_THREADS=$threads /usr/bin/time -f "%M" ./train_gpt2 >log.txt 2>rss.txt)
python3 - "$work" "$steps" "$threads" <<'PY'
import json, re, statistics, sys
from pathlib import Path
work, steps, threads = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ms = [float(m) for m in re.findall(r"step \d+: train loss [-\d.naif]+ \(took ([\d.]+) ms\)",
                                    (work / "log.txt").read_text())]
assert len(ms) == steps + 1, f"llmc_step: {len(ms)} steps in the log, want {steps + 1}"
rss_kb = int((work / "rss.txt").read_text().split()[-1])
print(json.dumps({"impl": "llm.c train_gpt2.c (fp32, OpenMP)", "threads": threads,
                  "config": {"num_layers": 12, "hidden": 768, "heads": 12, "seq_length": 64,
                             "micro_batch": 4, "vocab": 50257},
                  "steps": steps, "median_step_ms": statistics.median(ms[1:]),
                  "peak_rss_bytes": rss_kb * 1024}))
PY
