#!/usr/bin/env bash
# A shell pipeline: generate a matrix, solve it from stdin, keep the assignment and the report.
set -euo pipefail
out=${1:-.}
lap generate --n 200 --range 100 --seed 7 \
  | lap solve - --quiet -o "$out/assignment.csv" --report "$out/report.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['solver'], r['objective'])" "$out/report.json"
