#!/usr/bin/env bash
# Prepares, on this (CPU) machine, everything tests/gpu/check.sh needs on a bare GPU image: one
# with the CUDA 13 toolkit, CMake, compute-sanitizer and python3 with PyTorch, but no OpenBLAS,
# oneDNN, Open MPI, fmt or GoogleTest and no network.
#
#   scripts/gpu_bundle.sh [build-dir]      (default: build/, the release preset)
#
# It builds zerotron, the tests/gpu programs and bench_attention (when that target exists) for
# the build's CUDA architectures (must include 80 and 90), then writes
#   gpu-bundle/tree/            the bundle, unpacked (for local checks)
#     bin/                      the programs, stripped
#     lib/                      every non-system shared library they load (OpenBLAS, oneDNN, fmt,
#                               Open MPI, PMIx, hwloc, libevent, gfortran, ...)
#     lib/compat/               libstdc++ and libgcc_s, used only where the image's are older
#     ompi/                     Open MPI's orted and mpirun, its plugins (mca_*), help files and
#                               configuration, relocated through OPAL_* variables; pmix/ likewise
#     env.sh                    sourced by check.sh: paths, OPAL_*/PMIX_* relocation, NCCL
#     MANIFEST                  commit, architectures, files and sizes
#   gpu-bundle/zerotron-gpu.tar.xz   the same tree, compressed: the one file to carry
#
# Not bundled (the image has them): glibc, the CUDA runtime and cuBLAS/cuBLASLt (toolkit), the
# driver. NCCL neither: the toolkit's libnccl.so.2 here is ~218 MB, and PyTorch wheels ship one
# (site-packages/nvidia/nccl/lib); env.sh finds it at run time (see there).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${root}/build}
out=${root}/gpu-bundle
tree=${out}/tree

die() {
  echo "gpu_bundle.sh: $*" >&2
  exit 1
}

[[ -f ${build}/CMakeCache.txt ]] || die "no configured build in ${build} (run scripts/build.sh release)"
# The architectures nvcc compiles for (cmake/cuda.cmake's default is 80;90).
archs=$(grep -oE 'arch=compute_[0-9]+,code=\[[^]]*\]' "${build}/build.ninja" | sort -u |
  sed -E 's/.*code=\[(.*)\]/\1/' | tr '\n' ' ')
[[ -n ${archs} ]] || die "${build} builds no CUDA code (was nvcc found at configure time?)"
for a in 80 90; do
  [[ ${archs} == *"sm_${a}"* ]] || die "the CUDA architectures '${archs}' lack sm_${a}"
done

# Build what the check runs (nothing else).
mapfile -t gpu_targets < <(ninja -C "${build}" -t targets all 2>/dev/null |
  grep -oE '^bin/(gpu_[A-Za-z0-9_]+|zerotron|bench_attention)(:| )' | tr -d ': ' | sort -u)
[[ ${#gpu_targets[@]} -gt 1 ]] || die "no GPU programs among ${build}'s targets"
cmake --build "${build}" -j "$(nproc)" --target "${gpu_targets[@]#bin/}"

rm -rf "${tree}"
mkdir -p "${tree}/bin" "${tree}/lib/compat" "${tree}/ompi/bin" "${tree}/ompi/etc" \
  "${tree}/ompi/share" "${tree}/pmix/lib" "${tree}/pmix/share"
for t in "${gpu_targets[@]}"; do
  install -m 755 "${build}/${t}" "${tree}/bin/"
done
strip --strip-unneeded "${tree}"/bin/*

# Open MPI 4.1 as Debian lays it out; ompi_info knows where.
ompi_path() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
ompi_pkglib=$(ompi_path pkglibdir)
ompi_pkgdata=$(ompi_path pkgdatadir)
ompi_sysconf=$(ompi_path sysconfdir)
ompi_bindir=$(ompi_path bindir)
[[ -d ${ompi_pkglib} ]] || die "Open MPI's plugin directory not found (ompi_info --path pkglibdir)"
install -m 755 "$(readlink -f "${ompi_bindir}/orted")" "${tree}/ompi/bin/orted"
install -m 755 "$(readlink -f "${ompi_bindir}/mpirun")" "${tree}/ompi/bin/orterun"
ln -s orterun "${tree}/ompi/bin/mpirun"
ln -s orterun "${tree}/ompi/bin/mpiexec"
cp -r "${ompi_pkgdata}" "${tree}/ompi/share/openmpi"
cp "${ompi_sysconf}"/openmpi-mca-params.conf "${ompi_sysconf}"/openmpi-default-hostfile \
  "${tree}/ompi/etc/" 2>/dev/null || true

# Libraries a bundled file may take from the image: glibc, the toolkit's CUDA libraries, the
# driver's, NCCL (found at run time). libstdc++/libgcc_s go to lib/compat instead.
is_system() {
  case "$1" in
    ld-linux* | linux-vdso* | libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | \
      libresolv.so* | libutil.so* | libcuda.so* | libcudart.so* | libcublas.so* | \
      libcublasLt.so* | libnccl.so* | libnvidia-*)
      return 0
      ;;
  esac
  return 1
}
# Open MPI and PMIx plugins for networks this check does not use (InfiniBand, UCX, libfabric,
# PSM) and OpenSHMEM are left out: their libraries are not on the image, and without them the
# plugins would not load anyway. Shared memory, TCP and self stay.
skip_plugin_dep='libucp|libuct|libucs|libucm|libibverbs|librdmacm|libfabric|libefa|libpsm|libinfinipath|libnl-|liboshmem|libmca_common_ucx|libmca_common_ofi|libmca_common_verbs|libjvm'

declare -A copied=()
collect_libs() { # every non-system library `ldd` resolves for file $1
  local line name path
  while read -r line; do
    [[ ${line} == *"=> not found"* ]] && die "$1: ${line}"
    [[ ${line} == *"=> /"* ]] || continue
    name=${line%% =>*}
    name=${name//[[:space:]]/}
    path=${line#*=> }
    path=${path%% (*}
    is_system "${name}" && continue
    [[ -n ${copied[${name}]:-} ]] && continue
    copied[${name}]=1
    case "${name}" in
      libstdc++.so* | libgcc_s.so*) cp -L "${path}" "${tree}/lib/compat/${name}" ;;
      *) cp -L "${path}" "${tree}/lib/${name}" ;;
    esac
  done < <(ldd "$1")
}

for f in "${tree}"/bin/* "${tree}/ompi/bin/orted" "${tree}/ompi/bin/orterun"; do
  [[ -L ${f} ]] || collect_libs "${f}"
done
mkdir -p "${tree}/ompi/lib/openmpi3"
for p in "${ompi_pkglib}"/mca_*.so; do
  if ldd "${p}" | grep -qE "${skip_plugin_dep}|not found"; then continue; fi
  case "$(basename "${p}")" in
    mca_*oshmem* | mca_spml_* | mca_sshmem_* | mca_scoll_* | mca_atomic_* | mca_memheap_*) continue ;;
  esac
  cp "${p}" "${tree}/ompi/lib/openmpi3/"
  collect_libs "${p}"
done

# PMIx (Open MPI's ext3x component links it): its own plugins and help files.
pmix_lib=$(ldd "${tree}/ompi/bin/orted" "${tree}"/ompi/lib/openmpi3/*.so 2>/dev/null |
  sed -n 's/.*libpmix.so.2 => \([^ ]*\).*/\1/p' | head -n 1)
if [[ -n ${pmix_lib} ]]; then
  pmix_prefix=$(dirname "$(dirname "$(readlink -f "${pmix_lib}")")")
  if [[ -d ${pmix_prefix}/lib/pmix ]]; then
    cp -r "${pmix_prefix}/lib/pmix" "${tree}/pmix/lib/pmix"
    for p in "${tree}"/pmix/lib/pmix/*.so; do collect_libs "${p}"; done
  fi
  [[ -d ${pmix_prefix}/share/pmix ]] && cp -r "${pmix_prefix}/share/pmix" "${tree}/pmix/share/pmix"
  # Its configuration names the plugin directory by absolute path: env.sh sets it instead.
  [[ -f ${pmix_prefix}/share/pmix-mca-params.conf ]] &&
    grep -v '^mca_base_component_path' "${pmix_prefix}/share/pmix-mca-params.conf" \
      >"${tree}/pmix/share/pmix-mca-params.conf"
fi
chmod u+w "${tree}"/lib/*.so* "${tree}"/lib/compat/* "${tree}"/ompi/lib/openmpi3/*.so
strip --strip-unneeded "${tree}"/lib/*.so* "${tree}"/lib/compat/* "${tree}"/ompi/lib/openmpi3/*.so \
  "${tree}"/ompi/bin/orted "${tree}"/ompi/bin/orterun 2>/dev/null || true

# The newest GLIBCXX the bundled programs and libraries ask for: env.sh adds lib/compat only
# where the image's libstdc++ lacks it.
glibcxx=$(objdump -T "${tree}"/bin/* "${tree}"/lib/*.so* 2>/dev/null |
  grep -oE 'GLIBCXX_[0-9.]+' | sort -uV | tail -n 1)
glibc=$(objdump -T "${tree}"/bin/* "${tree}"/lib/*.so* "${tree}"/ompi/bin/* \
  "${tree}"/ompi/lib/openmpi3/*.so 2>/dev/null | grep -oE 'GLIBC_[0-9.]+' | sort -uV | tail -n 1)

install -m 644 "${root}/tests/gpu/bundle_env.sh" "${tree}/env.sh"
sed -i "s/@GLIBCXX@/${glibcxx}/; s/@GLIBC@/${glibc}/" "${tree}/env.sh"

{
  echo "commit $(git -C "${root}" rev-parse HEAD)$(git -C "${root}" diff --quiet HEAD || echo ' (with uncommitted changes)')"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), CUDA architectures ${archs}"
  echo "nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "needs ${glibc} (image's glibc at least that), ${glibcxx} (else lib/compat is used)"
  (cd "${tree}" && find . -type f -printf '%s %p\n' | sort -k2)
} >"${tree}/MANIFEST"

rm -f "${out}/zerotron-gpu.tar.xz"
tar -C "${tree}" -cf - . | xz -T0 -6 >"${out}/zerotron-gpu.tar.xz"
echo "bundle: ${tree} ($(du -sh "${tree}" | cut -f1)), ${out}/zerotron-gpu.tar.xz" \
  "($(du -h "${out}/zerotron-gpu.tar.xz" | cut -f1)); programs: ${gpu_targets[*]#bin/}"
