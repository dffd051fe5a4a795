#!/bin/sh
set -eu
message="${GREETING}, ${INSTALL_ID}!"
printf '%s\n' "$message" > "${ROOT}/greeting.txt"
echo "greeter wrote: $message"
printf '{"message": "%s", "file": "%s/greeting.txt"}\n' "$message" "$ROOT" > "$FERRY_OUTPUTS"
