#!/bin/sh
# Says which identity the job runs with: in the customer's account, the role of its operation
# (the maintenance role for a deploy), assumed by the runner for this job alone.
set -eu
echo "maintenance role: $MAINTENANCE_ROLE"
echo "license key secret: $LICENSE_KEY_ARN"
if command -v aws >/dev/null 2>&1; then
  echo "runs as: $(aws sts get-caller-identity --query Arn --output text)"
else
  echo "no aws CLI on this host"
fi
echo '{}' > "$FERRY_OUTPUTS"
