#!/bin/sh
set -eu
rm -rf "${FERRY_INSTALL_DIR}/root"
echo "sandbox removed"
