#!/bin/sh
# A teardown runs as the deprovision role.
set -eu
if command -v aws >/dev/null 2>&1; then
  echo "tears down as: $(aws sts get-caller-identity --query Arn --output text)"
fi
