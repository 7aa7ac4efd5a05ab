#!/usr/bin/env bash
# Checks every bundled model and sample against the sha256 in its PROVENANCE
# file. One line per mismatch naming the file; exit 1 if any.
#   assets/check-models.sh [ROOT]   ROOT defaults to this script's folder
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")" && pwd)}
bad=0
for prov in "$root"/models/*/PROVENANCE "$root"/samples/PROVENANCE; do
  [ -f "$prov" ] || continue
  dir=$(dirname "$prov")
  while read -r sum file; do
    if [ ! -f "$dir/$file" ]; then
      echo "error: $dir/$file is missing (listed in $prov)" >&2
      bad=1
      continue
    fi
    got=$(sha256sum "$dir/$file" | cut -d' ' -f1)
    if [ "$got" != "$sum" ]; then
      echo "error: $dir/$file: sha256 $got does not match $sum in $prov" >&2
      bad=1
    fi
  done < <(grep -E '^[0-9a-f]{64}  ' "$prov")
done
[ $bad = 0 ] && echo "assets: every sha256 matches its PROVENANCE"
exit $bad
