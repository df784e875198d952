#!/usr/bin/env bash
# Hang attribution (CTest: dist.hang_attribution.<case>): in a 4-rank job rank 1 fails to arrive
# at its next collective in the middle of step 3. The job must end within 60 s of its start,
# every process of it gone, with one line per stuck group that names rank 1 and what it does:
#   stop     rank 1 stops (SIGSTOP; --comm-timeout 20) -> "rank 1 (host H) never arrived: not
#            responding for S s (stopped or dead), last seen ..."
#   diverge  rank 1 waits in a barrier on the world group that no other rank calls
#            (--comm-timeout 3, the shortest the hang tests use) -> "rank 1 (host H) never
#            arrived: it is in barrier #N on group world (...): diverged"
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=background_job.sh
source "$(dirname "$0")/background_job.sh" "$@"
case $case in
  stop)
    timeout=20
    want='rank 1 \(host [^)]+\) never arrived: not responding for [0-9.]+ s \(stopped or dead\)'
    ;;
  diverge)
    timeout=3
    want='rank 1 \(host [^)]+\) never arrived: it is in barrier #[0-9]+ on group world[^:]*: diverged'
    ;;
  *) fail "unknown case '$case'" ;;
esac
limit=60
# Every process of the job carries this in its environment (mpirun passes it on with -x).
tag="hang-attribution-$$-$RANDOM"
leftovers() { grep -lsaz "^ZT_HANG_TAG=$tag\$" /proc/[0-9]*/environ | cut -d/ -f3 || true; }
start=$(date +%s.%N)
ZT_HANG_TAG=$tag ZT_MPIRUN_ARGS="-x ZT_INJECT_FAULT=$case:1:3 -x ZT_HANG_TAG" \
  setsid "$root/launch/mpirun.sh" -np 4 "$zt" train --device cpu --mock-data --vocab-size 64 \
  --num-layers 1 --hidden-size 32 --num-attention-heads 4 --seq-length 8 --train-iters 1000 \
  --comm-timeout "$timeout" > "$work/job.log" 2>&1 &
job=$!
elapsed() { echo "$(date +%s.%N) - $start" | bc; }
while kill -0 "$job" 2>/dev/null; do
  if (($(echo "$(elapsed) > $limit" | bc))); then
    cat "$work/job.log"
    fail "$case: the job still runs after $limit s"
  fi
  sleep 0.2
done
status=0
wait "$job" || status=$?
ended=$(elapsed)
cat "$work/job.log"
echo "---- exit status $status after $ended s"
# mpirun is gone; a rank it failed to kill would still be here.
for _ in $(seq 25); do
  [ -z "$(leftovers)" ] && break
  sleep 0.2
done
left=$(leftovers)
[ -z "$left" ] || fail "$case: processes of the job still alive after mpirun ended: $left"
[ "$status" -ne 0 ] || fail "$case: the job exited 0"
grep -Eq "zerotron: error: collective .*$want" "$work/job.log" ||
  fail "$case: no line matches '$want'"
repeated=$(grep -o 'collective [a-z_ ()]* on group [a-z]* timed out' "$work/job.log" | sort | uniq -d)
[ -z "$repeated" ] || fail "$case: a group's line was printed more than once: $repeated"
echo "PASS: $case: rank 1 named, every process gone, $ended s"
