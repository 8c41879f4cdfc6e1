# Sourced by the device scripts that run GPU tests in steps under one call's time limit:
#   R=$OUT/NAME; LIMIT=560; source benchmarks/device/pytest_steps.sh
#   step NAME PYTEST-ARGS...      # logs $R/NAME.log, one summary line in $R/summary.log
export PYTHONPATH=.
mkdir -p $R; T0=$(date +%s)
# the GPU suites run on any Hopper card (H100 or H200); the card is written beside the logs
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "H100\|H200" || { echo "not a Hopper"; exit 0; }
{ git log -1 --format=%H; nvidia-smi --query-gpu=name --format=csv,noheader; } > $R/commit.txt
step() {  # step NAME PYTEST-ARGS...: not run when under 20 s of LIMIT is left
  local name=$1; shift
  local left=$(( LIMIT - ($(date +%s) - T0) ))
  [ $left -lt 20 ] && { echo "$name: not run (no time left)" >> $R/summary.log; return; }
  timeout $left python3 -m pytest -q -p no:cacheprovider "$@" > $R/$name.log 2>&1
  echo "$name: exit $? at $(( $(date +%s) - T0 )) s: $(tail -n 1 $R/$name.log)" >> $R/summary.log
}
