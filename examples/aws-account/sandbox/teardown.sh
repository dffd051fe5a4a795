#!/bin/sh
set -eu
rm -rf "${FERRY_STATE_DIR}/root"
echo "sandbox removed"
