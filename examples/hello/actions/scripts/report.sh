#!/bin/sh
set -eu
i=0
while [ "$i" -lt "$TIMES" ]; do
  echo "the greeting is: $GREETING"
  i=$((i + 1))
done
printf '{"words": %s}\n' "$(echo "$GREETING" | wc -w)" >> "$NUON_ACTIONS_OUTPUT_FILEPATH"
