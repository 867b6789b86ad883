#!/usr/bin/env bash
# gen-conf-doc.sh: rewrite the generated key tables of docs/conf.md from the conf table in
# common/conf.c (via ordo-scheduler --conf-reference). With --check, only report whether
# docs/conf.md is current (exit 1 when it is not).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${ORDO_BIN_DIR:-build/bin}
doc=docs/conf.md
new=$(mktemp)
trap 'rm -f "$new"' EXIT
awk '/<!-- BEGIN KEYS -->/{print; exit} {print}' "$doc" > "$new"
"$bin/ordo-scheduler" --conf-reference >> "$new"
awk 'f{print} /<!-- END KEYS -->/{f=1; print}' "$doc" | awk 'NR==1 || !/<!-- END KEYS -->/ || NR>1' >> "$new"
if [ "${1:-}" = "--check" ]; then
  if diff -u "$doc" "$new"; then echo "docs/conf.md is current"; echo "1 passed, 0 failed"; exit 0; fi
  echo "docs/conf.md is out of date: run scripts/gen-conf-doc.sh"; exit 1
fi
cp "$new" "$doc"
echo "wrote $doc"
