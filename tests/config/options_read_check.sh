#!/usr/bin/env bash
# Every training option does something: for each field of src/config/options.inc, some code
# reads it as a member (`.field` or `->field`, not a call of a function so named), either
# outside src/config or in src/config/derive.cpp, which turns options into the configurations
# the trainer and the planner read. The parser, the table and the checks do not count: an option
# only they touch is a flag that does nothing.
# usage: options_read_check.sh SOURCE_DIR
set -euo pipefail
root=${1:?usage: options_read_check.sh SOURCE_DIR}
cd "$root"

# Accepted for DeepSpeed compatibility and read by nothing yet; their --help says so. Each
# leaves this list when it gets its meaning.
allowed=(
  contiguous_gradients  # gradients are always in one contiguous buffer (false is refused)
)

# Acted on inside src/config by design, so read there rather than by a consumer: --config and
# --deepspeed-config name the JSON file the parser reads before the flags; --mock-data is the
# explicit choice of synthetic data that the checks require when --data-path is not given (the
# data layer then takes the empty --data-path as the mock stream).
parser_options=(config deepspeed_config mock_data)

fields=$(sed -n 's/^ZT_OPTION([^,]*, *\([a-z0-9_]*\),.*/\1/p' src/config/options.inc)
[[ $(wc -l <<<"$fields") -ge 60 ]] || { echo "could not read the fields of options.inc" >&2; exit 1; }

readers() {  # the files whose code reads member $1
  grep -rlP --include='*.cpp' --include='*.h' "(\.|->)$1\b(?!\s*\()" src apps |
    grep -v '^src/config/' || true
  grep -lP "(\.|->)$1\b(?!\s*\()" src/config/derive.cpp || true
}

bad=0
for f in $fields; do
  listed=0
  for a in "${allowed[@]}"; do [[ $a == "$f" ]] && listed=1; done
  for a in "${parser_options[@]}"; do [[ $a == "$f" ]] && continue 2; done
  used=$(readers "$f" | head -1)
  if [[ $listed == 0 && -z $used ]]; then
    echo "option field '$f' is read by nothing outside src/config: a flag that does nothing" >&2
    bad=1
  elif [[ $listed == 1 && -n $used ]]; then
    echo "option field '$f' is read ($used): take it off the allow-list" >&2
    bad=1
  fi
done
[[ $bad == 0 ]] && echo "all $(wc -l <<<"$fields") option fields are read (${#allowed[@]} allowed unread)"
exit $bad
