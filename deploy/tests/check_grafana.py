#!/usr/bin/env python3
"""Checks deploy/grafana: the dashboards are what the generator writes, are valid JSON with
unique, stable uids, every panel and query names the provisioned data source uid, every query
parses as PromQL (promtool, through a throw-away rule file) and names only exported metrics.

    deploy/tests/check_grafana.py [--promtool promtool]

Exit 0: all checks passed; 1: a check failed.
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

import yaml

from fleet_spec import METRICS, PROMETHEUS_SERIES, Checker, metric_names

GRAFANA = pathlib.Path(__file__).resolve().parents[1] / "grafana"
# Stable uids: links and bookmarks use them, so they never change.
EXPECTED_UIDS = {"zf-fleet", "zf-inference", "zf-replay", "zf-learner", "zf-staleness",
                 "zf-strength"}
# What each dashboard must show (a metric family each of its topics needs).
MUST_SHOW = {
    "zf-fleet": {"zf_actor_games_total", "zf_actor_leaf_evaluations_total",
                 "zf_inference_evaluations_total", "zf_learner_steps_total"},
    "zf-inference": {"zf_inference_batch_rows", "zf_inference_max_batch_rows",
                     "zf_inference_queue_wait_seconds", "zf_inference_compute_seconds"},
    "zf-replay": {"zf_replay_positions_stored", "zf_replay_inserts_total",
                  "zf_replay_sampled_positions_total", "zf_replay_inserted_positions_total",
                  "zf_replay_rejections_total"},
    "zf-learner": {"zf_learner_steps_total", "zf_learner_loss",
                   "zf_learner_data_wait_seconds_total", "zf_learner_published_version"},
    "zf-staleness": {"zf_learner_published_version", "zf_inference_model_version",
                     "zf_actor_model_version"},
    "zf-strength": {"zf_evaluator_elo", "zf_evaluator_version", "zf_inference_model_version",
                    "zf_evaluator_games_total", "zf_evaluator_gate_decisions_total"},
}


def dashboards():
    return sorted((GRAFANA / "dashboards").glob("*.json"))


def queries(dashboard):
    for panel in dashboard.get("panels", []):
        for target in panel.get("targets", []):
            yield panel, target


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--promtool", default="promtool")
    args = parser.parse_args()
    c = Checker()

    generator = subprocess.run([sys.executable, str(GRAFANA / "generate_dashboards.py"),
                                "--check"], capture_output=True, text=True)
    c.expect(generator.returncode == 0, f"generator: {generator.stderr.strip()}")

    datasources = yaml.safe_load((GRAFANA / "provisioning/datasources/prometheus.yml")
                                 .read_text())["datasources"]
    c.expect(len(datasources) == 1 and datasources[0]["type"] == "prometheus",
             "provisioning: one Prometheus data source")
    uid = datasources[0].get("uid")
    c.expect(uid == "zf-prometheus", f"provisioning: data source uid is fixed, got {uid}")
    provider = yaml.safe_load((GRAFANA / "provisioning/dashboards/zerofleet.yml").read_text())
    c.expect(provider["providers"][0]["type"] == "file", "provisioning: a file provider")

    seen_uids, seen_titles, expressions = set(), set(), []
    for path in dashboards():
        try:
            dashboard = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            c.expect(False, f"{path.name}: invalid JSON: {error}")
            continue
        duid = dashboard.get("uid")
        c.expect(duid not in seen_uids, f"{path.name}: uid {duid} used twice")
        c.expect(dashboard.get("title") not in seen_titles, f"{path.name}: title used twice")
        seen_uids.add(duid)
        seen_titles.add(dashboard.get("title"))
        c.expect(dashboard.get("id") is None, f"{path.name}: no database id (provisioned)")
        panel_ids = [p.get("id") for p in dashboard.get("panels", [])]
        c.expect(len(panel_ids) == len(set(panel_ids)) and None not in panel_ids,
                 f"{path.name}: panel ids unique")
        c.expect(len(panel_ids) >= 4, f"{path.name}: has panels")
        shown = set()
        for panel in dashboard.get("panels", []):
            where = f"{path.name}/{panel.get('title')}"
            c.expect(panel.get("datasource", {}).get("uid") == uid,
                     f"{where}: panel data source uid {panel.get('datasource')}")
            c.expect(panel.get("targets"), f"{where}: has queries")
        for panel, target in queries(dashboard):
            where = f"{path.name}/{panel.get('title')}/{target.get('refId')}"
            c.expect(target.get("datasource", {}).get("uid") == uid,
                     f"{where}: query data source uid {target.get('datasource')}")
            expr = target.get("expr", "")
            c.expect("$" not in expr.replace("{{", ""),
                     f"{where}: Grafana variables do not evaluate outside Grafana: {expr}")
            names = metric_names(expr)
            unknown = names - METRICS - PROMETHEUS_SERIES
            c.expect(names and not unknown, f"{where}: unknown metrics {sorted(unknown)}")
            shown |= names
            expressions.append((where, expr))
        missing = MUST_SHOW.get(duid, set()) - shown
        c.expect(not missing, f"{path.name}: does not show {sorted(missing)}")
    c.expect(seen_uids == EXPECTED_UIDS, f"dashboard uids {sorted(seen_uids)} != "
             f"{sorted(EXPECTED_UIDS)}")

    tool = shutil.which(args.promtool)
    if tool is None:
        print("note: promtool not found; PromQL syntax not checked")
    else:
        rules = {"groups": [{"name": "dashboards", "rules": [
            {"record": f"zf:query_{i}", "expr": expr} for i, (_, expr) in enumerate(expressions)
        ]}]}
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
            yaml.safe_dump(rules, f)
            f.flush()
            result = subprocess.run([tool, "check", "rules", f.name], capture_output=True,
                                    text=True)
        c.expect(result.returncode == 0,
                 f"dashboard queries do not parse as PromQL:\n{result.stdout}{result.stderr}")
    return c.finish(f"grafana ({len(seen_uids)} dashboards, {len(expressions)} queries)")


if __name__ == "__main__":
    sys.exit(main())
