#!/usr/bin/env bash
# install-python-deps.sh [--print-path]
# Makes the virtual environment of the reference checks from tests/requirements.txt (every
# package pinned, installed with --no-deps: see that file for why). The environment's folder is
# named by a hash of the requirements and the base interpreter, so an unchanged file costs one
# stat, a changed one gets a new environment, and clones on one machine share it.
# --print-path prints that folder and installs nothing (CMake asks it where the Python is).
# ZT_PYTHON_ENV_DIR overrides where the environments live (default ~/.cache/zerotron).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
requirements=$root/tests/requirements.txt
base=/usr/bin/python3 # Debian's, which scripts/install-deps.sh installs with python3-venv
[[ -x $base ]] || base=$(command -v python3)
hash=$({ cat "$requirements"; "$base" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-12)
parent=${ZT_PYTHON_ENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/zerotron}
venv=$parent/venv-$hash
if [[ ${1:-} == --print-path ]]; then
  echo "$venv"
  exit 0
fi
[[ -f $venv/installed ]] && exit 0

mkdir -p "$parent"
exec 9>"$parent/.lock" # another clone may be installing the same environment
flock 9
[[ -f $venv/installed ]] && exit 0
echo "zerotron: installing the reference checks' Python packages into $venv"
rm -rf "$venv"
"$base" -m venv "$venv"
# --no-compile: Python compiles what the checks import when they first import it, not every
# module of every package now (most of torch's and transformers' never run here).
"$venv/bin/python" -m pip install --quiet --no-deps --no-input --progress-bar off --no-compile \
  -r "$requirements"
"$venv/bin/python" -c 'import torch; assert float(torch.ones(2) @ torch.ones(2)) == 2'
touch "$venv/installed"
