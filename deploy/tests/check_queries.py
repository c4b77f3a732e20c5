#!/usr/bin/env python3
"""Evaluates every PromQL expression of every Grafana dashboard panel and every alert rule
through a live Prometheus's HTTP API (/api/v1/query) and fails if any errors or returns no data.

    deploy/tests/check_queries.py http://localhost:9090 [--wait 120]

Meant for a Prometheus that scrapes a running fleet (`zf run` or deploy/compose) for at least a
minute: rate(...[1m]) needs two scrapes in its window. An alert expression is evaluated without
its final comparison (`... > 0.2` becomes `...`): a healthy fleet must return data for it, not
fire it. --wait retries queries that return no data until that many seconds have passed (the
first scrapes and rate windows take a while to fill); errors fail at once.

Metrics that exist only in a configuration a plaintext `zf run` does not have (NOT_IN_PLAIN_RUN)
may return no data: such a query is listed as "absent" with the reason, not failed. An error in
it still fails.

Exit 0: every query returned data; 1: some did not (each is listed with its source); 2: usage.
"""
import argparse
import json
import pathlib
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

DEPLOY = pathlib.Path(__file__).resolve().parents[1]
# A trailing top-level comparison with a number: "expr > 0.2", "expr == 0", "expr < 0.25".
_THRESHOLD = re.compile(r"\s*(?:==|!=|>=|<=|>|<)\s*(?:bool\s+)?-?[0-9.eE+]+\s*$")
# Metric -> why a plaintext fleet has no series of it.
NOT_IN_PLAIN_RUN = {
    "zf_grpc_server_calls_denied_total":
        "counted only by servers with mutual TLS (docs/security.md); a refusal makes the series",
}
_METRIC = re.compile(r"\bzf_[a-z0-9_]+\b")


def absent_reason(expr):
    """Why `expr` may return no data on a plaintext fleet, or None if it must return data."""
    names = set(_METRIC.findall(expr))
    if names and names <= NOT_IN_PLAIN_RUN.keys():
        return "; ".join(NOT_IN_PLAIN_RUN[n] for n in sorted(names))
    return None


def dashboard_queries():
    for path in sorted((DEPLOY / "grafana" / "dashboards").glob("*.json")):
        dashboard = json.loads(path.read_text())
        for panel in dashboard.get("panels", []):
            for target in panel.get("targets", []):
                if target.get("expr"):
                    yield (f"dashboard {dashboard['uid']} / {panel['title']} / "
                           f"{target['refId']}", target["expr"])


def without_threshold(expr):
    return _THRESHOLD.sub("", expr.strip())


def alert_queries():
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            name = rule.get("alert") or rule.get("record")
            yield f"alert {name}", without_threshold(rule["expr"])


def query(base_url, expr, timeout=30):
    """Returns (error or None, number of series or samples)."""
    url = f"{base_url.rstrip('/')}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = json.load(response)
    except urllib.error.HTTPError as error:
        try:
            body = json.load(error)
        except ValueError:
            return f"HTTP {error.code}", 0
    except (urllib.error.URLError, OSError, ValueError) as error:
        return f"request failed: {error}", 0
    if body.get("status") != "success":
        return f"{body.get('errorType')}: {body.get('error')}", 0
    result = body["data"]["result"]
    if body["data"]["resultType"] == "scalar":
        return None, 1
    return None, len(result)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url", help="Prometheus base URL, e.g. http://localhost:9090")
    parser.add_argument("--wait", type=float, default=0,
                        help="seconds to keep retrying queries that return no data")
    args = parser.parse_args()
    if not args.base_url.startswith(("http://", "https://")):
        print(f"check_queries: base URL must start with http:// or https://, got "
              f"{args.base_url!r}", file=sys.stderr)
        return 2

    pending = list(dashboard_queries()) + list(alert_queries())
    total = len(pending)
    deadline = time.monotonic() + args.wait
    errors = []
    while True:
        empty = []
        for source, expr in pending:
            error, count = query(args.base_url, expr)
            if error:
                errors.append((source, expr, error))
            elif count == 0:
                empty.append((source, expr))
        pending = empty
        waiting = [expr for _, expr in pending if not absent_reason(expr)]
        if not waiting or errors or time.monotonic() >= deadline:
            break
        time.sleep(5)

    for source, expr, error in errors:
        print(f"ERROR  {source}\n       {expr}\n       {error}")
    absent = [(source, expr) for source, expr in pending if absent_reason(expr)]
    pending = [(source, expr) for source, expr in pending if not absent_reason(expr)]
    for source, expr in absent:
        print(f"absent {source}\n       {expr}\n       ({absent_reason(expr)})")
    for source, expr in pending:
        print(f"EMPTY  {source}\n       {expr}")
    failed = len(errors) + len(pending)
    print(f"{total - failed - len(absent)} of {total} queries returned data "
          f"({len(errors)} errors, {len(pending)} empty, {len(absent)} absent as expected)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
