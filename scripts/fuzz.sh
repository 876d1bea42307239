#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for a bounded time, on a copy of its committed corpus
# (tests/fuzz/corpus/<target>/), from a build made with the asan preset (clang, ASan+UBSan,
# TESSERA_BUILD_FUZZERS). A crash, a leak, a sanitizer report or a FUZZ_CHECK failure fails the
# run; the input that caused it is left as build-asan/fuzz-findings/<target>/crash-*, ready to
# be committed as a regression input under tests/fuzz/corpus/<target>/ once fixed.
#
#   TESSERA_FUZZ_SECONDS   time per target (default 30)
#   TESSERA_FUZZ_TARGETS   space-separated subset (default: every target built)
#   scripts/fuzz.sh [build dir]  (default build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build-asan}"
seconds="${TESSERA_FUZZ_SECONDS:-30}"
targets="${TESSERA_FUZZ_TARGETS:-$(cd "$build/tests/fuzz" && ls fuzz_* | grep -v '^fuzz_corpus_' |
  sed 's/^fuzz_//' | sort | tr '\n' ' ')}"

failed=()
for target in $targets; do
  binary="$build/tests/fuzz/fuzz_$target"
  work="$build/fuzz-corpus/$target"
  findings="$build/fuzz-findings/$target"
  mkdir -p "$work" "$findings"
  # New inputs go to the work copy; the committed corpus stays as it is.
  cp -n tests/fuzz/corpus/"$target"/* "$work"/ 2>/dev/null || true
  echo "fuzz: $target for ${seconds}s"
  if ! "$binary" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$findings/" "$work" > "$findings/log.txt" 2>&1; then
    echo "fuzz: $target FAILED; the input is in $findings, the report in $findings/log.txt"
    tail -40 "$findings/log.txt"
    failed+=("$target")
  else
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$findings/log.txt" | tail -2 || true
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]}"
  exit 1
fi
