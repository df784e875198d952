#!/usr/bin/env python3
"""Every CUDA kernel's resources as ptxas reported them at build time, checked against what the
kernels' launches and each target allow, so a kernel that would fail to launch or spill on a GPU
fails here first, on a machine without one.

Reads the <object>.ptxas files cmake/ptxas_report.sh keeps beside each CUDA object (the compile
passes -Xptxas=-v), or the files named, and checks per kernel and architecture:
  - registers: at most 255, and registers x the largest block the kernel is launched with at
    most the 65,536 of a multiprocessor (the kernels launch 256 threads, 512 for the
    cross-entropy rows: LAUNCH_THREADS; a launch asking for more fails with "too many resources
    requested for launch");
  - no spills to local memory (spill stores or loads: a kernel tuned to fit its registers that
    no longer does);
  - static shared memory within the 48 KiB every target allows without opt-in (the dynamic
    carves of the attention kernels are checked against V100's 96 KiB, A100's 163 KiB and
    H100's 227 KiB by gpu_kernels_cuda_tiling_test).
Prints one line per architecture with the largest figures and one per violation; exits 1 on any
violation, 2 when there is nothing to read.

Usage: check_cuda_resources.py BUILD_DIR | FILE.ptxas...
"""
import glob
import os
import re
import sys

MAX_REGISTERS = 255
REGISTERS_PER_SM = 65536
STATIC_SMEM = 48 * 1024
# The largest block each kernel is launched with, by a part of its mangled name; the rest 256.
LAUNCH_THREADS = {"cross_entropy": 512, "vocab_ce": 512}
DEFAULT_THREADS = 256


def launch_threads(kernel):
    for part, threads in LAUNCH_THREADS.items():
        if part in kernel:
            return threads
    return DEFAULT_THREADS


def parse(path):
    """(kernel, arch, registers, spill_stores, spill_loads, stack, smem) per entry function."""
    out, kernel, arch, props = [], None, None, {}
    for line in open(path, errors="replace"):
        m = re.search(r"Compiling entry function '([^']+)' for '(sm_\d+)'", line)
        if m:
            kernel, arch, props = m.group(1), m.group(2), {}
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m and kernel:
            props.update(stack=int(m.group(1)), stores=int(m.group(2)), loads=int(m.group(3)))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and kernel:
            smem = re.search(r"(\d+) bytes smem", line)
            out.append((kernel, arch, int(m.group(1)), props.get("stores", 0),
                        props.get("loads", 0), props.get("stack", 0),
                        int(smem.group(1)) if smem else 0))
            kernel = None
    return out


def main(argv):
    if len(argv) == 2 and os.path.isdir(argv[1]):
        files = sorted(glob.glob(os.path.join(argv[1], "**", "*.ptxas"), recursive=True))
    else:
        files = argv[1:]
    entries = [e for f in files for e in parse(f)]
    if not entries:
        print(f"check_cuda_resources: no ptxas reports in {' '.join(argv[1:]) or '(nothing)'}")
        return 2
    bad = []
    for kernel, arch, regs, stores, loads, stack, smem in entries:
        threads = launch_threads(kernel)
        if regs > MAX_REGISTERS or regs * threads > REGISTERS_PER_SM:
            bad.append(f"{arch} {kernel}: {regs} registers x {threads} threads per block exceeds "
                       f"{REGISTERS_PER_SM} (or {MAX_REGISTERS} per thread)")
        if stores or loads:
            bad.append(f"{arch} {kernel}: spills {stores} bytes stored, {loads} bytes loaded")
        if smem > STATIC_SMEM:
            bad.append(f"{arch} {kernel}: {smem} bytes of static shared memory exceed "
                       f"{STATIC_SMEM}")
    for arch in sorted({e[1] for e in entries}):
        es = [e for e in entries if e[1] == arch]
        top = max(es, key=lambda e: e[2])
        print(f"{arch}: {len(es)} kernels; most registers {top[2]} ({top[0][:80]}), most static "
              f"shared memory {max(e[6] for e in es)} bytes, largest stack "
              f"{max(e[5] for e in es)} bytes, spills {sum(e[3] + e[4] for e in es)} bytes")
    for b in bad:
        print("VIOLATION", b)
    print(f"check_cuda_resources: {len(entries)} kernel builds in {len(files)} files, "
          f"{len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
