#!/bin/sh
set -eu
summary="${LOUD} has ${LENGTH} characters"
printf '%s\n' "$summary" > "${ROOT}/report.txt"
echo "reporter: $summary"
printf '{"summary": "%s", "file": "%s/report.txt"}\n' "$summary" "$ROOT" > "$FERRY_OUTPUTS"
