#!/usr/bin/env bash
# Open MPI's rsh agent for namespace nodes (plm_rsh_agent): "rsh_agent.sh HOST CMD..." runs CMD
# through a shell inside HOST's network, UTS and mount namespaces, as ssh would on a real node.
# HOST is ztm-nK or its address 10.77.0.K; the holders' pids are under $ZTM_STATE.
set -eu
host=$1
shift
case $host in
  10.77.0.*) host=ztm-n${host##*.} ;;
esac
pid=$(cat "${ZTM_STATE:-/run/ztm}/$host.pid")
exec nsenter -t "$pid" -u -n -m --wd="$PWD" -- /bin/sh -c "$*"
