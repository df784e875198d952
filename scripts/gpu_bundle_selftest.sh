#!/usr/bin/env bash
# Checks a GPU bundle (scripts/gpu_bundle.sh) on the machine that built it, as far as a machine
# without a GPU can: inside a private mount namespace (unshare -m, needs root) every system copy
# of a bundled library, Open MPI's and PMIx's directories and binaries are covered by empty
# files and directories, so a program that still reached for one would fail. Then:
#   1. ldd: every bundled program and library resolves each non-system library inside the bundle;
#   2. zerotron train on the CPU as one process (an MPI singleton) and under the bundle's
#      mpirun with 2 ranks: same losses;
#   3. tests/gpu/check.sh OUTDIR end to end (its GPU steps fail or skip here; the point is that
#      it runs, stays bounded and writes its files and a summary that parses).
# Usage: scripts/gpu_bundle_selftest.sh [OUTDIR]   (default: gpu-bundle/selftest)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tree=${root}/gpu-bundle/tree
out=${1:-${root}/gpu-bundle/selftest}
[[ -f ${tree}/env.sh ]] || {
  echo "gpu_bundle_selftest.sh: no bundle in ${tree}; run scripts/gpu_bundle.sh first" >&2
  exit 1
}
if [[ ${ZT_SELFTEST_INSIDE:-} != 1 ]]; then
  exec env ZT_SELFTEST_INSIDE=1 unshare -m --propagation private "$0" "$@"
fi

# --- hide the system's copies ---------------------------------------------------------------
empty_dir=$(mktemp -d)
empty_file=$(mktemp)
hidden=0
hide() {
  local p
  p=$(readlink -f "$1") || return 0
  [[ -e ${p} ]] || return 0
  if [[ -d ${p} ]]; then mount --bind "${empty_dir}" "${p}"; else mount --bind "${empty_file}" "${p}"; fi
  hidden=$((hidden + 1))
}
for f in "${tree}"/lib/*.so*; do
  n=$(basename "${f}")
  for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-openmp \
    /usr/lib/x86_64-linux-gnu/openmpi/lib; do
    [[ -e ${d}/${n} ]] && hide "${d}/${n}"
  done
done
for p in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /etc/openmpi \
  /usr/share/openmpi /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/orted /usr/bin/orterun \
  /usr/bin/ompi_info; do
  hide "${p}"
done
echo "hid ${hidden} system files and directories"

# shellcheck source=tests/gpu/bundle_env.sh
. "${tree}/env.sh" "${tree}"
printf '%s' "${ZT_BUNDLE_NOTES}"
fail=0

# --- 1. ldd ---------------------------------------------------------------------------------
sys_re='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libresolv\.so|libcuda\.so|libcudart\.so|libcublas\.so|libcublasLt\.so|libnccl\.so|libstdc\+\+\.so|libgcc_s\.so)'
checked=0
while IFS= read -r -d '' f; do
  checked=$((checked + 1))
  while read -r line; do
    name=${line%% *}
    if [[ ${line} == *"not found"* ]]; then
      echo "ldd: ${f#"${tree}"/}: ${line}"
      fail=1
    elif [[ ${line} == *"=> /"* && ! ${name} =~ ${sys_re} ]]; then
      path=${line#*=> }
      path=${path%% (*}
      if [[ ${path} != "${tree}"/* ]]; then
        echo "ldd: ${f#"${tree}"/}: ${name} from outside the bundle: ${path}"
        fail=1
      fi
    fi
  done < <(ldd "${f}" 2>&1)
done < <(find "${tree}" -type f \( -path '*/bin/*' -o -name '*.so*' \) -print0)
echo "ldd: ${checked} files checked"

# --- 2. train on the CPU, singleton and mpirun -np 2 ----------------------------------------
tiny=(--device cpu --mock-data --vocab-size 512 --num-layers 2 --hidden-size 64
  --num-attention-heads 4 --seq-length 32 --micro-batch-size 2 --global-batch-size 4
  --train-iters 3 --lr 1e-3 --log-interval 1)
work=$(mktemp -d)
losses() { grep -oE 'lm loss: [0-9.E+-]+' "$1" | tr '\n' ' '; }
if timeout 300 zerotron train "${tiny[@]}" >"${work}/one.log" 2>&1; then
  echo "train, 1 process: $(losses "${work}/one.log")"
else
  echo "train, 1 process: FAILED"
  tail -n 20 "${work}/one.log"
  fail=1
fi
if timeout 300 "${root}/launch/mpirun.sh" -np 2 zerotron train "${tiny[@]}" >"${work}/two.log" 2>&1; then
  echo "train, mpirun -np 2 ($(command -v mpirun)): $(losses "${work}/two.log")"
  [[ $(losses "${work}/one.log") == "$(losses "${work}/two.log")" ]] ||
    echo "  (losses differ from 1 process in the last digits: fp32 data-parallel sums)"
else
  echo "train, mpirun -np 2: FAILED"
  tail -n 20 "${work}/two.log"
  fail=1
fi
rm -rf "${work}"

# The overlap trace's arithmetic on a synthetic Nsight Systems export (no nsys here).
python3 "${root}/tests/gpu/overlap_trace.py" --selftest | tail -n 1 || fail=1

# --- 3. check.sh end to end -----------------------------------------------------------------
rm -rf "${out}"
set +e
timeout 480 "${root}/tests/gpu/check.sh" "${out}" "${tree}" >/dev/null 2>&1
rc=$?
set -e
echo "check.sh: exit ${rc} (1 expected without a GPU); wrote: $(find "${out}" -maxdepth 1 -type f -printf "%f ")"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(json.dumps(s["headline"]))' \
  "${out}/summary.json" || fail=1
exit "${fail}"
