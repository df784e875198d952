# Sourced by the shell tests that run zerotron jobs, some of them in the background
# (checkpoint_safety.sh, checkpoint_stop.sh):  source "$(dirname "$0")/background_job.sh" "$@"
# Sets zt (the binary, $1), case (the case to run, $2), root (the repository) and work (a
# temporary directory, removed on exit). A background job runs in its own process group
# (setsid) with its pid in `job`: on exit the whole of it (the wrapper, mpirun, the ranks) is
# stopped, also when the test fails half-way. `losses FILE` prints a metrics file's lm losses;
# `fail MESSAGE` ends the test.
# shellcheck shell=bash disable=SC2034
zt=$1
case=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
job=
cleanup() {
  # Twice: at the first stop the launcher may let the ranks save; the second ends the job.
  [ -n "$job" ] && kill -TERM -- "-$job" 2>/dev/null && sleep 0.5 && kill -TERM -- "-$job" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
losses() { grep -o '"lm_loss":[^,]*' "$1" | cut -d: -f2; }
fail() { echo "FAIL: $*"; exit 1; }
# A command that fails under `set -e` ends the test silently; name it, with what the job printed.
on_error() {
  echo "FAIL: $(basename "$0") $case: line $1 exited $2"
  for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done
}
trap 'on_error $LINENO $?' ERR
