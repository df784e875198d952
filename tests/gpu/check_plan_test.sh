#!/usr/bin/env bash
# tests/gpu/check.sh --plan without a GPU: the phases in order with their budgets, phase 1 the
# smoke phase within 90 s, the whole within 540 s (9 minutes of a 10-minute device command), the
# JSON line's total the sum of the phases'.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
plan=$("${root}/tests/gpu/check.sh" --plan)
echo "${plan}"
python3 - "$(tail -n 1 <<<"${plan}")" <<'PY'
import json, sys
p = json.loads(sys.argv[1])
phases = p["phases"]
assert phases[0]["name"] == "smoke" and phases[0]["budget_s"] <= 90, phases[0]
assert [x["phase"] for x in phases] == list(range(1, len(phases) + 1)), phases
assert p["budget_s"] == sum(x["budget_s"] for x in phases) <= 540, p["budget_s"]
print(f'{len(phases)} phases, {p["budget_s"]} s in all')
PY
