#!/usr/bin/env python3
"""Checks deploy/prometheus with promtool: both scrape configurations, the alert rules, and the
rule unit tests (every alert has a case where it fires and one where it stays silent). Also
checks that rules name only metrics the processes export and that the Kubernetes configuration
keys on the annotations and namespace the manifests use.

    deploy/tests/check_prometheus.py [--promtool promtool]

Exit 0: all checks passed; 1: a check failed; 77: promtool is missing (ctest: skipped).
"""
import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile

import yaml

from fleet_spec import METRICS, PROMETHEUS_SERIES, Checker, metric_names

PROMETHEUS = pathlib.Path(__file__).resolve().parents[1] / "prometheus"
SKIP = 77


def promtool(c, tool, *args, cwd=PROMETHEUS):
    result = subprocess.run([tool, *args], capture_output=True, text=True, timeout=120, cwd=cwd)
    c.expect(result.returncode == 0,
             f"promtool {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


def check_k8s_config(c, tool):
    config = yaml.safe_load((PROMETHEUS / "prometheus-k8s.yml").read_text())
    jobs = config["scrape_configs"]
    c.expect(len(jobs) == 1 and jobs[0]["kubernetes_sd_configs"][0]["role"] == "pod",
             "prometheus-k8s.yml: one job discovering pods")
    c.expect(jobs[0]["kubernetes_sd_configs"][0]["namespaces"]["names"] == ["zerofleet"],
             "prometheus-k8s.yml: watches the zerofleet namespace")
    sources = {label for rule in jobs[0]["relabel_configs"]
               for label in rule.get("source_labels", [])}
    for annotation in ("scrape", "port", "path"):
        c.expect(f"__meta_kubernetes_pod_annotation_prometheus_io_{annotation}" in sources,
                 f"prometheus-k8s.yml: uses the prometheus.io/{annotation} annotation")
    c.expect("__meta_kubernetes_pod_label_app_kubernetes_io_component" in sources,
             "prometheus-k8s.yml: job from app.kubernetes.io/component")
    # Debian's Prometheus is built without Kubernetes discovery, so its promtool rejects
    # kubernetes_sd_configs; check everything else with a static target in its place.
    for job in jobs:
        job.pop("kubernetes_sd_configs")
        job["static_configs"] = [{"targets": ["pod.example:9300"]}]
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "prometheus.yml").write_text(yaml.safe_dump(config))
        shutil.copy(PROMETHEUS / "alerts.yml", tmp)
        promtool(c, tool, "check", "config", "prometheus.yml", cwd=tmp)


def check_rule_tests(c):
    rules = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())
    tests = yaml.safe_load((PROMETHEUS / "alerts_test.yml").read_text())
    fires, silent = set(), set()
    for test in tests["tests"]:
        for case in test.get("alert_rule_test", []):
            (fires if case.get("exp_alerts") else silent).add(case["alertname"])
    for group in rules["groups"]:
        for rule in group["rules"]:
            name = rule.get("alert") or rule.get("record")
            c.expect(name in fires, f"alerts_test.yml: no case where {name} fires")
            c.expect(name in silent, f"alerts_test.yml: no case where {name} stays silent")
            unknown = metric_names(rule["expr"]) - METRICS - PROMETHEUS_SERIES
            c.expect(not unknown, f"alerts.yml: {name} names unknown metrics {sorted(unknown)}")
            c.expect("summary" in rule.get("annotations", {}), f"alerts.yml: {name} summary")
            c.expect("severity" in rule.get("labels", {}), f"alerts.yml: {name} severity")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--promtool", default="promtool")
    args = parser.parse_args()
    tool = shutil.which(args.promtool)
    if tool is None:
        print("SKIP: promtool not found (scripts/bootstrap installs Debian's prometheus)")
        return SKIP
    c = Checker()
    promtool(c, tool, "check", "config", "prometheus.yml")
    promtool(c, tool, "check", "rules", "alerts.yml")
    promtool(c, tool, "test", "rules", "alerts_test.yml")
    check_k8s_config(c, tool)
    check_rule_tests(c)
    return c.finish("deploy/prometheus")


if __name__ == "__main__":
    sys.exit(main())
