#!/usr/bin/env bash
# A real Prometheus (Debian's package) scrapes a short `zf run` (the whole fleet in one process,
# every component's metrics on one endpoint); then
#   - `promtool check metrics` accepts the live /metrics,
#   - every PromQL expression of every dashboard panel and alert rule returns data
#     (check_queries.py, through Prometheus's HTTP API),
#   - the alert rules load in that Prometheus (`promtool check rules` passes on them first).
#   deploy/tests/check_live_fleet.sh ZF_BINARY
# Exit 0: all pass; 1: a check failed; 2: usage; 77: a tool is missing (skipped).
set -euo pipefail
ZF=${1:?usage: check_live_fleet.sh ZF_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
DEPLOY=$(dirname "$HERE")
for tool in prometheus promtool python3; do
  command -v "$tool" >/dev/null || { echo "skipped: $tool is missing"; exit 77; }
done
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fetch() {  # fetch URL FILE: exit 0 when the URL answered 200
  python3 -c 'import sys, urllib.request; open(sys.argv[2], "wb").write(urllib.request.urlopen(sys.argv[1], timeout=5).read())' "$1" "$2" 2>/dev/null
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
METRICS_PORT=$(free_port)
PROM_PORT=$(free_port)

promtool check rules "$DEPLOY/prometheus/alerts.yml" >/dev/null

"$ZF" run --game tictactoe --dir "$WORK/run" --minutes 2 --progress_s 5 --eval_games 2 \
  --metrics_listen "127.0.0.1:$METRICS_PORT" >"$WORK/run.log" 2>&1 &
PIDS+=($!)

cat >"$WORK/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $DEPLOY/prometheus/alerts.yml
scrape_configs:
  - job_name: zf-run
    static_configs:
      - targets: ["127.0.0.1:$METRICS_PORT"]
YML
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
PIDS+=($!)

# The fleet's /metrics, once it answers.
for _ in $(seq 1 60); do
  fetch "http://127.0.0.1:$METRICS_PORT/metrics" "$WORK/metrics.txt" && break
  sleep 1
done
if [[ ! -s "$WORK/metrics.txt" ]]; then
  echo "FAIL: zf run's /metrics never answered"; cat "$WORK/run.log"; exit 1
fi
# Scrape again after the fleet has done some work, so every family has samples.
sleep 20
fetch "http://127.0.0.1:$METRICS_PORT/metrics" "$WORK/metrics.txt"
if ! lint=$(promtool check metrics <"$WORK/metrics.txt" 2>&1) || [[ -n "$lint" ]]; then
  echo "FAIL: promtool check metrics on zf run's /metrics:"; echo "$lint"; exit 1
fi
for component in actor learner inference replay; do
  grep -q "zf_build_info{.*component=\"$component\"" "$WORK/metrics.txt" ||
    { echo "FAIL: no zf_build_info for $component"; exit 1; }
done

if ! python3 "$HERE/check_queries.py" "http://127.0.0.1:$PROM_PORT" --wait 90; then
  echo "--- zf run log (tail)"; tail -20 "$WORK/run.log"
  exit 1
fi
echo "live fleet: promtool check metrics clean, every dashboard and alert expression returned data (or is absent as check_queries.py expects)"
