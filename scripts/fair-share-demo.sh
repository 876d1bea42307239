#!/usr/bin/env bash
# The embedding example: two teams share a small simulated GPU cluster through the library
# directly (no daemon) and their dominant shares converge, shown as a live table.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target tessera-fair-share-demo
exec build/examples/embedding/tessera-fair-share-demo --store var/fair-share-demo.db "$@"
