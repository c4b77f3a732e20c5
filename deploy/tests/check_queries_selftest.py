#!/usr/bin/env python3
"""Self-test of check_queries.py against a real Prometheus (Debian's `prometheus` package):
serves a synthetic /metrics page with every metric family of fleet_spec.METRICS (values that
grow between scrapes), lets Prometheus scrape it every second with deploy/prometheus/alerts.yml
loaded, then runs check_queries.py and expects it to pass; then removes one family from the page
and expects check_queries.py to fail on the queries that use it.

This proves the query checker and that every dashboard and alert query returns data when the
processes export the names in fleet_spec.py. That the processes really do is the job of the
live test the integrator wires to `zf run` (check_queries.py against its Prometheus).

    deploy/tests/check_queries_selftest.py [--prometheus prometheus]

Exit 0: passed; 1: failed; 77: prometheus is missing (ctest: skipped).
"""
import argparse
import http.server
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from fleet_spec import METRICS

TESTS = pathlib.Path(__file__).resolve().parent
DEPLOY = TESTS.parent
SKIP = 77
HISTOGRAMS = {"zf_inference_batch_rows", "zf_inference_queue_wait_seconds",
              "zf_inference_compute_seconds", "zf_inference_request_seconds",
              "zf_replay_ack_seconds", "zf_replay_fsync_seconds", "zf_actor_game_length_moves",
              "zf_learner_step_seconds"}
LABELS = {
    "zf_inference_requests_total": [{"code": "ok"}, {"code": "invalid_argument"}],
    "zf_replay_rejections_total": [{"reason": "bad_value"}],
    "zf_replay_rate_limiter_wait_seconds_total": [{"operation": "insert"},
                                                  {"operation": "sample"}],
    "zf_replay_service_invalid_requests_total": [{"rpc": "insert"}],
    "zf_replay_service_overloaded_total": [{"rpc": "insert"}],
    "zf_replay_log_quarantined_bytes": [{"kind": "torn_tail"}, {"kind": "corrupt"}],
    "zf_learner_loss": [{"head": "policy"}, {"head": "value"}, {"head": "total"}],
    "zf_build_info": [{"version": "0.1.0", "component": "test"}],
    "zf_evaluator_elo": [{"which": w, "bound": b} for w in ("newest", "best")
                         for b in ("estimate", "lower", "upper")],
    "zf_evaluator_version": [{"which": "newest"}, {"which": "best"}],
    "zf_evaluator_games_total": [{"result": r} for r in ("win", "draw", "loss")],
    "zf_evaluator_gate_decisions_total": [{"decision": "accept"}, {"decision": "reject"}],
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Exporter:
    """Serves every family in `families`; counters grow with each scrape."""

    def __init__(self, families):
        self.families = set(families)
        self.scrapes = 0
        self.lock = threading.Lock()

    def page(self):
        with self.lock:
            self.scrapes += 1
            n = self.scrapes
            families = sorted(self.families)
        lines = []
        for name in families:
            label_sets = LABELS.get(name, [{}])
            for labels in label_sets:
                text = ",".join(f'{k}="{v}"' for k, v in labels.items())
                if name in HISTOGRAMS:
                    sep = "," if text else ""
                    for le, share in (("1", 0.5), ("64", 0.9), ("256", 1.0), ("+Inf", 1.0)):
                        lines.append(f'{name}_bucket{{{text}{sep}le="{le}"}} {10 * n * share}')
                    lines.append(f"{name}_sum{{{text}}} {5.0 * n}")
                    lines.append(f"{name}_count{{{text}}} {10 * n}")
                elif name.endswith("_total"):
                    lines.append(f"{name}{{{text}}} {3 * n}")
                elif name == "zf_inference_max_batch_rows":
                    lines.append(f"{name}{{{text}}} 256")
                else:
                    lines.append(f"{name}{{{text}}} {n % 7 + 1}")
        return "\n".join(lines) + "\n"

    def serve(self, port):
        exporter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = exporter.page().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


def wait_ready(url, deadline):
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.5)
    return False


def run_checker(base_url, wait):
    return subprocess.run([sys.executable, str(TESTS / "check_queries.py"), base_url,
                           "--wait", str(wait)], capture_output=True, text=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prometheus", default="prometheus")
    args = parser.parse_args()
    binary = shutil.which(args.prometheus)
    if binary is None:
        print("SKIP: prometheus not found (scripts/bootstrap installs Debian's prometheus)")
        return SKIP

    exporter = Exporter(METRICS)
    exporter_port, prometheus_port = free_port(), free_port()
    server = exporter.serve(exporter_port)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(DEPLOY / "prometheus" / "alerts.yml", tmp)
        (pathlib.Path(tmp) / "prometheus.yml").write_text(f"""
global: {{scrape_interval: 1s, evaluation_interval: 1s}}
rule_files: [alerts.yml]
scrape_configs:
  - job_name: zf-synthetic
    static_configs: [{{targets: ["127.0.0.1:{exporter_port}"]}}]
""")
        log = open(pathlib.Path(tmp) / "prometheus.log", "w")
        process = subprocess.Popen(
            [binary, f"--config.file={tmp}/prometheus.yml", f"--storage.tsdb.path={tmp}/data",
             f"--web.listen-address=127.0.0.1:{prometheus_port}"],
            stdout=log, stderr=subprocess.STDOUT)
        base_url = f"http://127.0.0.1:{prometheus_port}"
        try:
            if not wait_ready(f"{base_url}/-/ready", time.monotonic() + 60):
                failures.append("prometheus did not become ready in 60s")
            else:
                result = run_checker(base_url, wait=60)
                print(result.stdout[-3000:])
                if result.returncode != 0:
                    failures.append("check_queries.py failed with every metric exported")
                # Without the learner's families, the queries naming them must come back empty.
                with exporter.lock:
                    exporter.families = {m for m in METRICS if not m.startswith("zf_learner_")}
                # Series go stale five minutes after their last scrape unless the target stops
                # reporting them: Prometheus marks them stale on the next scrape.
                time.sleep(3)
                result = run_checker(base_url, wait=0)
                lines = result.stdout.splitlines()
                # Each EMPTY line is followed by the expression.
                empty = [lines[i + 1].strip() for i, l in enumerate(lines[:-1])
                         if l.startswith("EMPTY")]
                if result.returncode == 0:
                    failures.append("check_queries.py passed with the learner's metrics missing")
                elif not empty or not all("zf_learner_" in e for e in empty):
                    failures.append(f"unexpected empty queries: {empty}")
                else:
                    print(f"without zf_learner_*: {len(empty)} queries empty, as expected")
        finally:
            process.terminate()
            process.wait(timeout=30)
            server.shutdown()
            log.close()
            if failures:
                print((pathlib.Path(tmp) / "prometheus.log").read_text()[-2000:])
    for failure in failures:
        print(f"FAIL: {failure}")
    if not failures:
        print("OK check_queries.py self-test")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
