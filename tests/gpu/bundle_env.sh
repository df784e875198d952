# shellcheck shell=bash
# The environment of a GPU bundle (scripts/gpu_bundle.sh copies this file into it as env.sh and
# fills in the @...@ versions). Source it with the bundle's directory as $1:
#   . <bundle>/env.sh <bundle>
# It puts the bundle's programs and libraries first, relocates Open MPI and PMIx into the bundle
# (their configured paths point at the build machine's /usr/lib/...), and finds NCCL.
# Sets ZT_NCCL_DIR (empty when no NCCL was found) and ZT_BUNDLE_NOTES (what it decided, one
# line per decision, for the check's log).
zt_b=$(cd "$1" && pwd)
ZT_BUNDLE_NOTES=""
zt_note() { ZT_BUNDLE_NOTES+="$*"$'\n'; }

zt_libs="${zt_b}/lib"
# lib/compat holds the build machine's libstdc++/libgcc_s (which need its glibc): only where the
# image's own libstdc++ lacks the newest symbol version the bundle uses.
zt_glibcxx="@GLIBCXX@"
zt_sys_stdcxx=$(/sbin/ldconfig -p 2>/dev/null | sed -n 's/.*libstdc++.so.6 (libc6,x86-64) => //p' |
  head -n 1)
if [[ -n ${zt_sys_stdcxx} ]] && grep -qa "${zt_glibcxx}" "${zt_sys_stdcxx}"; then
  zt_note "libstdc++: the image's (${zt_sys_stdcxx} has ${zt_glibcxx})"
else
  zt_libs="${zt_libs}:${zt_b}/lib/compat"
  zt_note "libstdc++: the bundle's (the image's ${zt_sys_stdcxx:-none} lacks ${zt_glibcxx})"
fi
zt_glibc_have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
zt_glibc_need="@GLIBC@"
zt_glibc_need=${zt_glibc_need#GLIBC_}
if [[ -n ${zt_glibc_have} ]] &&
  [[ $(printf '%s\n%s\n' "${zt_glibc_need}" "${zt_glibc_have}" | sort -V | head -n 1) != "${zt_glibc_need}" ]]; then
  zt_note "WARNING: glibc ${zt_glibc_have} is older than the ${zt_glibc_need} the bundle needs"
fi

# NCCL: not carried (libnccl.so.2 is ~218 MB). In order: $ZT_NCCL_DIR as given; the one a pip
# PyTorch brings (site-packages/nvidia/nccl/lib, the CUDA 13 wheels' site-packages/nvidia/cu13/lib,
# or torch/lib); the dynamic linker's cache; the toolkit's lib64. libnccl.so.2 keeps its ABI
# across 2.x; zerotron needs 2.14+ (ncclCommFinalize).
if [[ -z ${ZT_NCCL_DIR:-} ]]; then
  ZT_NCCL_DIR=$(python3 - 2>/dev/null <<'PY'
import glob, os, site, sys
roots = []
try:
    import nvidia.nccl  # the nvidia-nccl-cuXX wheel PyTorch depends on
    roots += [os.path.join(p, "lib") for p in nvidia.nccl.__path__]
except Exception:
    pass
try:
    import torch
    roots.append(os.path.join(os.path.dirname(torch.__file__), "lib"))
except Exception:
    pass
for sp in site.getsitepackages() + [site.getusersitepackages()]:
    roots.append(os.path.join(sp, "nvidia", "nccl", "lib"))
    roots.append(os.path.join(sp, "nvidia", "cu13", "lib"))
for r in roots:
    if glob.glob(os.path.join(r, "libnccl.so.2*")):
        print(r)
        sys.exit(0)
PY
  )
  if [[ -z ${ZT_NCCL_DIR} ]]; then
    zt_p=$(/sbin/ldconfig -p 2>/dev/null | sed -n 's/.*libnccl.so.2 (libc6,x86-64) => //p' | head -n 1)
    [[ -n ${zt_p} ]] && ZT_NCCL_DIR=$(dirname "${zt_p}")
  fi
  if [[ -z ${ZT_NCCL_DIR} ]]; then
    for zt_d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
      if [[ -e ${zt_d}/libnccl.so.2 ]]; then
        ZT_NCCL_DIR=${zt_d}
        break
      fi
    done
  fi
fi
if [[ -n ${ZT_NCCL_DIR} ]]; then
  zt_libs="${zt_libs}:${ZT_NCCL_DIR}"
  zt_note "NCCL: ${ZT_NCCL_DIR}"
else
  zt_note "NCCL: not found (set ZT_NCCL_DIR); programs that link it cannot start"
fi
# The toolkit's runtime and cuBLAS/cuBLASLt (RUNPATH names the build machine's /usr/local/cuda/lib);
# after them, as a fallback for an image without the toolkit's libraries, the CUDA 13 wheels'
# (site-packages/nvidia/cu13/lib: libcudart.so.13, libcublas.so.13, libcublasLt.so.13).
for zt_d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [[ -d ${zt_d} ]] && zt_libs="${zt_libs}:${zt_d}"
done
zt_cu13=$(python3 - 2>/dev/null <<'PY'
import glob, os, site
for sp in site.getsitepackages() + [site.getusersitepackages()]:
    d = os.path.join(sp, "nvidia", "cu13", "lib")
    if glob.glob(os.path.join(d, "libcudart.so.13*")) or glob.glob(os.path.join(d, "libcublas.so.13*")):
        print(d)
        break
PY
)
if [[ -n ${zt_cu13} && :${zt_libs}: != *":${zt_cu13}:"* ]]; then
  zt_libs="${zt_libs}:${zt_cu13}"
  zt_note "CUDA 13 wheel libraries (after the toolkit's): ${zt_cu13}"
fi
export LD_LIBRARY_PATH="${zt_libs}${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
export ZT_NCCL_DIR
export PATH="${zt_b}/bin:${zt_b}/ompi/bin:/usr/local/cuda/bin:${PATH}"

# Open MPI 4.1 relocated: every directory it would take from its configure-time prefix.
export OPAL_PREFIX="${zt_b}/ompi" OPAL_EXEC_PREFIX="${zt_b}/ompi"
export OPAL_BINDIR="${zt_b}/ompi/bin" OPAL_SBINDIR="${zt_b}/ompi/bin"
export OPAL_LIBDIR="${zt_b}/lib" OPAL_PKGLIBDIR="${zt_b}/ompi/lib/openmpi3"
export OPAL_LIBEXECDIR="${zt_b}/ompi/bin"
export OPAL_DATAROOTDIR="${zt_b}/ompi/share" OPAL_DATADIR="${zt_b}/ompi/share"
export OPAL_PKGDATADIR="${zt_b}/ompi/share/openmpi" OPAL_SYSCONFDIR="${zt_b}/ompi/etc"
export PMIX_PREFIX="${zt_b}/pmix" PMIX_EXEC_PREFIX="${zt_b}/pmix"
export PMIX_LIBDIR="${zt_b}/lib" PMIX_PKGLIBDIR="${zt_b}/pmix/lib/pmix"
export PMIX_DATAROOTDIR="${zt_b}/pmix/share" PMIX_DATADIR="${zt_b}/pmix/share"
export PMIX_PKGDATADIR="${zt_b}/pmix/share/pmix" PMIX_SYSCONFDIR="${zt_b}/pmix/share"
export PMIX_MCA_mca_base_component_path="${zt_b}/pmix/lib/pmix"
# Containers run as root; shared memory and loopback only.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
unset zt_b zt_libs zt_glibcxx zt_sys_stdcxx zt_glibc_have zt_glibc_need zt_p zt_d zt_cu13
