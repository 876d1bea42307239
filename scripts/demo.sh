#!/usr/bin/env bash
# Installs what is missing, builds the fair-share demo and runs it: two teams share a small
# simulated GPU cluster and their dominant shares converge, shown as a live table. This is
# the README's main command until the daemon (tesserad) exists.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target tessera-fair-share-demo
exec build/examples/embedding/tessera-fair-share-demo --store var/fair-share-demo.db "$@"
