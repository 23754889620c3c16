#!/usr/bin/env bash
# Scale figures (issue 11): SF10 and SF1 on the adversarial and late-arriving layouts, one run.py per
# (scale, layout) with spark.driver.memory=1g, then REPORT_SF10.md from their results JSONs.
# POINTS / RANGES / SCALES / LAYOUTS override the defaults; REPORT=0 skips the report. Data is generated on first use (SF10: long).
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
OUT=benchmarks/sieve/out
SCALES=${SCALES-"10 1"}
LAYOUTS=${LAYOUTS:-"adversarial late"}
REPORT_LAYOUTS=${REPORT_LAYOUTS:-$LAYOUTS}
mkdir -p "$OUT"
for s in $SCALES; do
  for l in $LAYOUTS; do
    $PY benchmarks/sieve/run.py --scale "$s" --layouts "$l" --points "${POINTS:-20}" --ranges "${RANGES:-10}" \
      --no-sweep --repeats-full 0 --warmup 2 --driver-memory 1g --json "$OUT/scale-sf$s-$l.json" --report "$OUT/REPORT-sf$s-$l.md" \
      --chart "$OUT/chart-sf$s-$l.png"
  done
done
[ "${REPORT:-1}" = 0 ] && exit 0
join() { local IFS=,; echo "$*"; }
large=(); small=()
for l in $REPORT_LAYOUTS; do large+=("$OUT/scale-sf10-$l.json"); small+=("$OUT/scale-sf1-$l.json"); done
$PY benchmarks/sieve/sieve_scale.py --large "$(join "${large[@]}")" --small "$(join "${small[@]}")" --lookups \
  --note "${NOTE:-}" --out benchmarks/sieve/REPORT_SF10.md
