#!/bin/sh
set -eu
root="${FERRY_INSTALL_DIR}/root"
mkdir -p "$root"
echo "sandbox ready at $root"
# The sandbox is provisioned with the provision role.
if command -v aws >/dev/null 2>&1; then
  echo "provisions as: $(aws sts get-caller-identity --query Arn --output text)"
fi
printf '{"root": "%s", "install": "%s"}\n' "$root" "$INSTALL_ID" > "$FERRY_OUTPUTS"
