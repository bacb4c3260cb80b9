#!/usr/bin/env bash
# Runs every fuzz target (or those named) for SECONDS each, one after the
# other, with the committed corpus, the JSON dictionary and the vendored
# test data (tests/data: recorded provider traffic and the
# JSON-Schema-Test-Suite) as read-only seeds. New inputs land in
# fuzz/corpus/<target>; crashes in fuzz/artifacts/<target>.
#
#   fuzz/run.sh 600                 # ten minutes per target
#   fuzz/run.sh 60 call_pipeline    # one target
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`); runs on stable Rust with
# `--sanitizer none`.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:?usage: fuzz/run.sh SECONDS [TARGET...]}"
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(call_pipeline schemas providers sse eventstream mcp_messages partial_json stream_mutants session_rows)
fi
crashed=()
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target"
  seeds=()
  case "$target" in
    providers|sse) seeds=("../tests/data/provider-fixtures") ;;
    schemas) seeds=("../tests/data/json-schema-test-suite/tests") ;;
  esac
  echo "== $target: ${seconds}s"
  # A crash stops the target; the others still run. `grep` only shows
  # the figures.
  cargo fuzz run --sanitizer none "$target" "corpus/$target" ${seeds[@]+"${seeds[@]}"} -- \
    -dict=json.dict -max_total_time="$seconds" -max_len=65536 -timeout=20 \
    -print_final_stats=1 > "$target.log" 2>&1 || crashed+=("$target")
  grep -E "^(stat::|==[0-9]+== ERROR|SUMMARY)" "$target.log" || true
done
if [ ${#crashed[@]} -gt 0 ]; then
  echo "crashed: ${crashed[*]} (inputs in fuzz/artifacts/<target>/)"
  exit 1
fi
