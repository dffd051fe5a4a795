#!/bin/sh
set -eu
echo "sandbox for install ${INSTALL_ID}: will ensure ${FERRY_INSTALL_DIR}/root exists"
