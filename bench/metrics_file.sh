# Readers of a `train --metrics-file` for the benchmark scripts (sourced).
# median_ms FILE SKIP: the median step time (ms) after the first SKIP steps.
median_ms() {
  python3 -c 'import json,statistics,sys
rows=[json.loads(l) for l in open(sys.argv[1]) if "\"lm_loss\"" in l]
print(statistics.median(r["elapsed_ms"] for r in rows[int(sys.argv[2]):]))' "$1" "$2"
}
# losses FILE: every step's loss, as one Python list.
losses() {
  python3 -c 'import json,sys
print([json.loads(l)["lm_loss"] for l in open(sys.argv[1]) if "\"lm_loss\"" in l])' "$1"
}
