#!/usr/bin/env python3
"""How much of a training run's communication and host copies ran under compute, from an Nsight
Systems trace exported to SQLite (nsys profile --export=sqlite): the GPU's own timestamps, so it
does not depend on how the host waits (a host-timed hidden fraction reads ~1.0 on NCCL, whose
wait() only enqueues a stream wait).

  overlap_trace.py TRACE.sqlite     one JSON object on stdout
  overlap_trace.py --selftest       checks the arithmetic on a synthetic trace (no GPU, no nsys)

Kernels whose name contains "nccl" are communication, every other kernel is compute; device-host
copies (CUPTI_ACTIVITY_KIND_MEMCPY) are the offloads and fetches of --cpu-checkpointing and the
staging. For each: busy milliseconds (the union of its intervals) and the part of it during which
some compute kernel ran on the same GPU, and their ratio (hidden_fraction; null when there is
none). A two-rank trace holds both GPUs: intervals are compared per deviceId, then summed.

The columns read, as NVIDIA's SQLite export schema reference for nsys documents them (Nsight
Systems documentation, "SQLite Export Schema Reference", CUDA section): CUPTI_ACTIVITY_KIND_KERNEL
and CUPTI_ACTIVITY_KIND_MEMCPY have start and end (INT NOT NULL, nanoseconds) and deviceId (the
device the kernel or copy ran on); a kernel's name is a StringIds id (StringIds: id INTEGER
PRIMARY KEY, value TEXT) in shortName or demangledName, whichever the version exports (looked up
with PRAGMA table_info, not assumed). This reads the export (nsys profile --export=sqlite), not
nsys stats' report tables, whose column headings change between versions.
Standard library only.
"""
import json
import os
import sqlite3
import sys
import tempfile


def union(intervals):
    """Sorted, merged [start, end) intervals."""
    out = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(merged):
    return sum(e - s for s, e in merged)


def intersection(a, b):
    """Length of the intersection of two merged interval lists."""
    i = j = 0
    total = 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if e > s:
            total += e - s
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def tables(db):
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def analyse(path):
    db = sqlite3.connect(path)
    have = tables(db)
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in have:
        return {"trace": path, "error": "no CUDA kernels in the trace"}
    names = dict(db.execute("SELECT id, value FROM StringIds")) if "StringIds" in have else {}
    columns = [r[1] for r in db.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
    name_column = next((c for c in ("shortName", "demangledName", "name") if c in columns), None)
    if name_column is None:
        return {"trace": path, "error": f"no kernel name column among {columns}"}
    device = "deviceId" if "deviceId" in columns else "0"
    comm, compute = {}, {}
    for start, end, name, dev in db.execute(
            f"SELECT start, end, {name_column}, {device} FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        text = str(names.get(name, name))
        (comm if "nccl" in text.lower() else compute).setdefault(dev, []).append((start, end))
    copies = {}
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in have:
        copy_columns = [r[1] for r in db.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_MEMCPY)")]
        copy_device = "deviceId" if "deviceId" in copy_columns else "0"
        for start, end, dev in db.execute(
                f"SELECT start, end, {copy_device} FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
            copies.setdefault(dev, []).append((start, end))
    busy = {dev: union(iv) for dev, iv in compute.items()}

    def part(by_device):
        count = total = hidden = 0
        for dev, intervals in by_device.items():
            u = union(intervals)
            count += len(intervals)
            total += length(u)
            hidden += intersection(u, busy.get(dev, []))
        return {"count": count, "busy_ms": total / 1e6, "under_compute_ms": hidden / 1e6,
                "hidden_fraction": hidden / total if total else None}

    return {"trace": path, "compute_busy_ms": sum(length(u) for u in busy.values()) / 1e6,
            "nccl_kernels": part(comm),
            "copies": part(copies)}


def selftest():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.sqlite")
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
        db.executemany("INSERT INTO StringIds VALUES (?, ?)",
                       [(1, "gemm_kernel"), (2, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")])
        db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL "
                   "(start INT, end INT, deviceId INT, shortName INT)")
        # GPU 0: compute 0-10 ms and 20-30 ms; NCCL 5-15 ms (5 hidden) and 25-27 ms (2 hidden).
        # GPU 1: compute 10-20 ms, which hides nothing of GPU 0's.
        ms = 1_000_000
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?)",
                       [(0, 10 * ms, 0, 1), (20 * ms, 30 * ms, 0, 1), (5 * ms, 15 * ms, 0, 2),
                        (25 * ms, 27 * ms, 0, 2), (10 * ms, 20 * ms, 1, 1)])
        db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT, end INT, deviceId INT)")
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?)",
                       [(12 * ms, 18 * ms, 0), (16 * ms, 22 * ms, 0)])  # 12-22 ms, 2 hidden
        db.commit()
        db.close()
        r = analyse(path)
    want = {"compute": 30.0, "nccl": (12.0, 7.0), "copies": (10.0, 2.0)}
    got_ok = (abs(r["compute_busy_ms"] - want["compute"]) < 1e-9
              and abs(r["nccl_kernels"]["busy_ms"] - want["nccl"][0]) < 1e-9
              and abs(r["nccl_kernels"]["under_compute_ms"] - want["nccl"][1]) < 1e-9
              and abs(r["copies"]["busy_ms"] - want["copies"][0]) < 1e-9
              and abs(r["copies"]["under_compute_ms"] - want["copies"][1]) < 1e-9)
    print(json.dumps(r))
    print("overlap_trace selftest: " + ("ok" if got_ok else "FAILED"))
    return 0 if got_ok else 1


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "--selftest":
        return selftest()
    print(json.dumps(analyse(sys.argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
