#!/bin/sh
set -eu
echo "will write ${ROOT}/greeting.txt: ${GREETING}, ${INSTALL_ID}!"
