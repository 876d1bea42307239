#!/usr/bin/env bash
# Installs every system package that Tessera's build, tests and benchmarks need on Debian 12.
# Idempotent: packages already present are skipped, so running it twice costs a few seconds.
# Runs apt-get as root, or through sudo when started by another user.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost-dev libboost-filesystem-dev libboost-system-dev
  libprotobuf-dev protobuf-compiler
  libsqlite3-dev sqlite3
  libspdlog-dev libfmt-dev
  doctest-dev
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libbenchmark-dev
  clang-format
  python3 python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
