#!/usr/bin/env bash
# Builds the toolkit, runs every tool that exists on its default config (a bare run, on data the
# project ships or generates), and prints a summary table with each tool's run directory.
#   scripts/demo.sh [preset]       (default preset: "default")
set -uo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
scripts/setup.sh "$preset" || exit $?

bin="build/$preset/bin"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
root="runs/demo-$stamp"
mkdir -p "$root"

rows=()
status=0
for exe in "$bin"/*; do
  [[ -x "$exe" && -f "$exe" ]] || continue
  tool="$(basename "$exe")"
  dir="$root/$tool"
  echo "demo: running $tool (logs in $dir.log)" >&2
  start=$(date +%s%N)
  timeout "${TOOLKIT_DEMO_TIMEOUT:-900}" "$exe" --out "$dir" >"$dir.json" 2>"$dir.log"
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  summary="$(head -c 70 "$dir.json" | tr -d '\n')"
  [[ $rc -ne 0 && $rc -ne 3 ]] && status=1 && summary="$(tail -n 1 "$dir.log" | head -c 70)"
  rows+=("$(printf '%-16s %4d %8s  %-40s %s' "$tool" "$rc" "$secs" "$dir" "$summary")")
done

printf '\n%-16s %4s %8s  %-40s %s\n' "tool" "exit" "seconds" "run directory" "result (stdout JSON, start)"
printf '%s\n' "${rows[@]}"
echo
echo "Run directories are under $root/ (each has manifest.json, config.resolved.yaml, metrics.jsonl, artifacts/)."
exit $status
