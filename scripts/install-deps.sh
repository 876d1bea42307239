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
  libssl-dev openssl
  libpugixml-dev
  clang-format
  clang libclang-rt-14-dev libfuzzer-14-dev
  python3 python3-matplotlib
  etcd-server python3-etcd3 python3-kubernetes
)
# The fake Kubernetes API server (plugins/kubernetes/testing) keeps its objects in etcd
# (etcd-server, through python3-etcd3) and is checked with the official Python client
# (python3-kubernetes) and kubectl. Debian's kubectl is the package kubernetes-client, which
# conflicts with the kubectl package some machines already have: it is added only when no
# kubectl is on PATH.
if ! command -v kubectl >/dev/null 2>&1; then packages+=(kubernetes-client); fi

# Conan 2 (conan/, scripts/conan-check.sh) is not in Debian 12: pip installs it from PyPI when
# `conan` is missing, into the system Python (Debian's wants --break-system-packages, PEP 668),
# here when pip is present and again at the end, after apt has installed python3-pip.
packages+=(python3-pip)
install_conan() {
  if command -v conan >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then return; fi
  local user=(); if [ "$(id -u)" -ne 0 ]; then user=(--user); fi
  echo "install-deps: installing conan 2 with pip"
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --break-system-packages "${user[@]}" 'conan>=2,<3'
}
install_conan

# moto (an independent AWS emulator; `moto_server` runs it over HTTP) for the aws_ec2_fake test
# of plugins/common/aws. Debian 12 has no package of it; pip installs the version the test and
# plugins/common/aws/testing/ec2_fault_proxy.py were checked against, the same way as Conan.
install_moto() {
  if command -v moto_server >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then return; fi
  local user=(); if [ "$(id -u)" -ne 0 ]; then user=(--user); fi
  echo "install-deps: installing moto[server] 5.2.1 with pip"
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --break-system-packages "${user[@]}" 'moto[server]==5.2.1'
}
install_moto

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
install_conan
install_moto
