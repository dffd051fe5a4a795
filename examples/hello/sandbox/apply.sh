#!/bin/sh
set -eu
root="${FERRY_INSTALL_DIR}/root"
mkdir -p "$root"
echo "sandbox ready at $root"
printf '{"root": "%s", "install": "%s"}\n' "$root" "$INSTALL_ID" > "$FERRY_OUTPUTS"
