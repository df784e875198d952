#!/usr/bin/env bash
# Installs the Debian packages zerotron needs, only when one is missing, so both README
# commands work on a fresh machine and cost nothing on a prepared one.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libopenblas-dev libopenblas-openmp-dev libdnnl-dev libopenmpi-dev openmpi-bin
  liburing-dev nlohmann-json3-dev libfmt-dev libgtest-dev libbenchmark-dev bible-kjv fortunes python3 python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "zerotron: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
