#!/usr/bin/env python3
"""What a user watches of a run, checked from outside (CTest: dist.observe.*).

  check_observe.py ZEROTRON MPIRUN CASE, CASE one of
    tensorboard  a 2-rank run with --tensorboard-dir and --metrics-file: rank 0 alone writes one
                 event file; the `tensorboard` package's reader finds the version event first and,
                 for every step, validation and test record of the JSONL, each scalar under its
                 tag with the JSONL value (as float32). Exits 77 (skipped; failed under
                 CI=true) without `tensorboard`.
    evaluate     `zerotron evaluate` of the saved run, on one rank and reshaped to tp 2, prints
                 the validation and test losses the run printed at its end; of a run that
                 evaluated twice, with no batch flag, the text of its last validation loss.
    progress     a save slowed to more than 5 s (ZT_INJECT_FAULT=slow-save) prints its start line
                 and at least one progress line (MB done, MB/s) before the saved line.
The data: each line of tests/fixtures/bpe_train_corpus.txt a document, through prepare-data.
"""
import glob
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

from missing_package import skip_or_fail

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures")


def run(cmd, env=None, expect=0):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != expect:
        print(" ".join(cmd), "\n", p.stdout, p.stderr)
        sys.exit(f"FAIL: exit {p.returncode}, expected {expect}")
    return p.stdout


def prepare(zt, work):
    docs = [l.strip() for l in open(os.path.join(FIX, "bpe_train_corpus.txt")) if l.strip()]
    text = os.path.join(work, "corpus.txt")
    with open(text, "w") as f:
        f.write("\n\n".join(docs) + "\n")
    tok = ["--vocab-file", os.path.join(FIX, "bpe_kjv", "vocab.json"),
           "--merge-file", os.path.join(FIX, "bpe_kjv", "merges.txt")]
    run([zt, "prepare-data", "--input", text, "--output-prefix", os.path.join(work, "c"),
         "--tokenizer-type", "GPT2BPETokenizer", "--append-eod", "--workers", "1"] + tok)
    return ["--data-path", os.path.join(work, "c_text_document"), "--split", "80,10,10"] + tok


MODEL = ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4",
         "--seq-length", "32", "--micro-batch-size", "1", "--global-batch-size", "2",
         "--attention-dropout", "0", "--hidden-dropout", "0", "--lr", "1e-3"]


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def train(zt, mpirun, work, data, extra, np=2, env=None):
    return run([mpirun, "-np", str(np), zt, "train"] + MODEL + data +
               ["--train-iters", "4", "--eval-interval", "2", "--eval-iters", "2",
                "--log-interval", "1"] + extra, env=env)


def check_tensorboard(zt, mpirun, work, data):
    try:
        from tensorboard.backend.event_processing import event_file_loader
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError as e:
        skip_or_fail(e)
    tb, jl = os.path.join(work, "tb"), os.path.join(work, "m.jsonl")
    train(zt, mpirun, work, data, ["--tensorboard-dir", tb, "--metrics-file", jl])
    files = glob.glob(os.path.join(tb, "events.out.tfevents.*"))
    assert len(files) == 1, f"FAIL: {files}: rank 0 alone writes one event file"
    first = next(iter(event_file_loader.EventFileLoader(files[0]).Load()))
    assert first.file_version == "brain.Event:2", f"FAIL: first event {first}"
    ea = EventAccumulator(tb, size_guidance={"scalars": 0})
    ea.Reload()
    got = {t: {e.step: e.value for e in ea.Scalars(t)} for t in ea.Tags()["scalars"]}
    want = {}
    records = [json.loads(l) for l in open(jl)]
    for r in records:
        it = r["iteration"]
        if "lm_loss" in r:
            pairs = {"lm loss": r["lm_loss"], "learning-rate": r["lr"],
                     "loss-scale": r["loss_scale"], "grad-norm": r["grad_norm"],
                     "iteration-time": r["elapsed_ms"] / 1e3, "throughput": r["tflops_per_rank"],
                     "tokens-per-second": r["tokens_per_s"],
                     "mem-peak-bytes": r["memory"]["peak"]}
            for k, v in r["memory"].items():
                if k not in ("peak", "fragmentation"):
                    pairs["mem-peak-bytes/" + k] = v
            for k, v in r["comm_bytes"].items():
                pairs["comm-bytes/" + k] = v
        else:
            split = "validation" if "validation_loss" in r else "test"
            pairs = {f"lm loss {split}": r[f"{split}_loss"],
                     f"lm loss {split} ppl": r[f"{split}_ppl"]}
        for tag, v in pairs.items():
            want.setdefault(tag, {})[it] = v
    assert "lm loss test" in want and "lm loss validation" in want, "FAIL: no evaluation records"
    assert want["comm-bytes/dp"][1] > 0, "FAIL: a 2-rank step moved no dp bytes"
    assert set(got) == set(want), f"FAIL: tags {sorted(got)} != {sorted(want)}"
    n = 0
    for tag, steps in want.items():
        assert set(got[tag]) == set(steps), f"FAIL: {tag} steps {sorted(got[tag])} != {sorted(steps)}"
        for it, v in steps.items():
            assert got[tag][it] == f32(v), f"FAIL: {tag} at {it}: {got[tag][it]} != {f32(v)}"
            n += 1
    print(f"PASS: {len(want)} tags, {n} scalars equal to the JSONL")


def losses(out, split):
    return [float(x) for x in re.findall(split + r" loss at iteration \d+.*?lm loss value: (\S+)", out)]


def check_evaluate(zt, mpirun, work, data):
    ck = os.path.join(work, "ck")
    # Validation only at the end: evaluate's validation from the first sample is the same.
    out = run([mpirun, "-np", "2", zt, "train"] + MODEL + data +
              ["--train-iters", "4", "--eval-interval", "100", "--eval-iters", "2",
               "--save", ck])
    valid, test = losses(out, "validation"), losses(out, "test")
    assert len(valid) == 1 and len(test) == 1, f"FAIL: run printed {valid} {test}\n{out}"
    for np, layout in ((1, []), (2, ["--tensor-model-parallel-size", "2"])):
        ev = run([mpirun, "-np", str(np), zt, "evaluate", "--load", ck, "--eval-iters", "2",
                  "--global-batch-size", "2", "--micro-batch-size", "1"] + data + layout)
        v, t = losses(ev, "validation"), losses(ev, "test")
        assert len(v) == 1 and len(t) == 1, f"FAIL: evaluate printed\n{ev}"
        for a, b, what in ((v[0], valid[0], "validation"), (t[0], test[0], "test")):
            assert abs(a - b) <= 1e-5 * abs(b), f"FAIL: {what} {a} != run's {b} (np {np})"
    # Evaluated during the run too (iterations 2 and 4): evaluate takes the batch and --eval-iters
    # from the checkpoint and scores the samples of the run's last evaluation, so with no batch
    # flag it prints the run's final validation loss. Same layout, same summation order: the
    # printed digits are equal (compared as text); the earlier samples would give another loss.
    ck2 = os.path.join(work, "ck2")
    out = train(zt, mpirun, work, data, ["--save", ck2])
    valid = re.findall(r"validation loss at iteration (\d+) \| lm loss value: (\S+)", out)
    assert [i for i, _ in valid] == ["2", "4"], f"FAIL: run printed {valid}\n{out}"
    ev = run([mpirun, "-np", "2", zt, "evaluate", "--load", ck2] + data)
    again = re.findall(r"validation loss at iteration (\d+) \| lm loss value: (\S+)", ev)
    assert again == [valid[-1]], f"FAIL: evaluate printed {again}, the run's last {valid[-1]}\n{ev}"
    assert "validation samples 4 to 7 (the run's last evaluation)" in ev, f"FAIL: samples\n{ev}"
    assert "warning" not in ev, f"FAIL: evaluate warned about settings\n{ev}"
    run([zt, "evaluate", "--load", ck] + data)  # one rank, the checkpoint's batch
    err = subprocess.run([zt, "evaluate"] + data, capture_output=True, text=True)
    assert err.returncode == 2 and err.stderr.startswith("zerotron: error: evaluate: --load"), \
        f"FAIL: no --load: {err.returncode} {err.stderr}"
    print(f"PASS: evaluate reproduces validation {valid[-1][1]} at iteration 4 and the first run's "
          f"test {test[0]} at tp 1 and 2")


def check_progress(zt, mpirun, work, data):
    ck = os.path.join(work, "ck")
    env = dict(os.environ, ZT_INJECT_FAULT="slow-save:0:2")
    out = train(zt, mpirun, work, data, ["--save", ck, "--save-interval", "2"], np=1, env=env)
    lines = out.splitlines()
    start = [i for i, l in enumerate(lines) if re.fullmatch(r" saving checkpoint at iteration 2 to \S+", l)]
    saved = [i for i, l in enumerate(lines) if "saved checkpoint at iteration 2" in l]
    assert len(start) == 1 and len(saved) == 1, f"FAIL: no start or saved line\n{out}"
    between = lines[start[0] + 1:saved[0]]
    progress = [l for l in between
                if re.search(r"saving checkpoint .*: [\d.]+ of [\d.]+ MB \(\d+%\), [\d.]+ MB/s", l)]
    assert progress, f"FAIL: no progress line during a slow save\n{out}"
    print(f"PASS: {len(progress)} progress line(s): {progress[0].strip()}")


def main():
    zt, mpirun, case = sys.argv[1], sys.argv[2], sys.argv[3]
    work = tempfile.mkdtemp(prefix="zt_observe_")
    data = prepare(zt, work)
    {"tensorboard": check_tensorboard, "evaluate": check_evaluate,
     "progress": check_progress}[case](zt, mpirun, work, data)


if __name__ == "__main__":
    main()
