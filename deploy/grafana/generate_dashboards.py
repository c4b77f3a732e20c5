#!/usr/bin/env python3
"""Writes the zerofleet Grafana dashboards (deploy/grafana/dashboards/*.json).

The JSON files are generated so that every panel names the provisioned data source uid, every
dashboard keeps its stable uid, and queries are written once. Edit this file, then run
    deploy/grafana/generate_dashboards.py            # rewrite the JSON files
    deploy/grafana/generate_dashboards.py --check    # exit 1 if they differ (ctest runs this)

Queries use fixed [1m] rate windows (six scrapes at the 10s interval) rather than Grafana's
$__rate_interval, so deploy/tests/check_queries.py can evaluate them verbatim through the
Prometheus HTTP API.

Metric names are those the processes export (grep '"zf_' in the sources); see
docs/monitoring.md for what each dashboard shows.
"""
import argparse
import json
import pathlib
import sys

DATASOURCE = {"type": "prometheus", "uid": "zf-prometheus"}  # provisioning/datasources/
OUT_DIR = pathlib.Path(__file__).resolve().parent / "dashboards"


def quantile(q, metric, by="instance"):
    return (f"histogram_quantile({q}, sum by (le, {by}) "
            f"(rate({metric}_bucket[1m])))")


class Dashboard:
    def __init__(self, uid, title, description):
        self.uid = uid
        self.title = title
        self.description = description
        self.panels = []
        self._x = 0
        self._y = 0

    def panel(self, title, targets, unit="short", description="", kind="timeseries", width=12,
              height=8, max_value=None, stack=False):
        """targets: list of (PromQL, legend) pairs."""
        if self._x + width > 24:
            self._x = 0
            self._y += height
        field_defaults = {"unit": unit}
        if max_value is not None:
            field_defaults["max"] = max_value
            field_defaults["min"] = 0
        if kind == "timeseries":
            field_defaults["custom"] = {
                "drawStyle": "line", "lineWidth": 1, "fillOpacity": 10,
                "stacking": {"mode": "normal" if stack else "none", "group": "A"},
            }
        panel = {
            "id": len(self.panels) + 1,
            "type": kind,
            "title": title,
            "description": description,
            "datasource": DATASOURCE,
            "gridPos": {"x": self._x, "y": self._y, "w": width, "h": height},
            "fieldConfig": {"defaults": field_defaults, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom"},
                        "tooltip": {"mode": "multi"}},
            "targets": [
                {"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr,
                 "legendFormat": legend, "range": True}
                for i, (expr, legend) in enumerate(targets)
            ],
        }
        if kind == "heatmap":
            panel["options"] = {"calculate": False, "yAxis": {"unit": unit},
                                "cellGap": 1, "color": {"scheme": "Oranges", "mode": "scheme"}}
            for target in panel["targets"]:
                target["format"] = "heatmap"
        self.panels.append(panel)
        self._x += width

    def to_json(self):
        return {
            "uid": self.uid,
            "title": self.title,
            "description": self.description,
            "tags": ["zerofleet"],
            "timezone": "utc",
            "schemaVersion": 39,
            "version": 1,
            "editable": False,
            "refresh": "10s",
            "time": {"from": "now-1h", "to": "now"},
            "templating": {"list": []},
            "annotations": {"list": []},
            "links": [{"type": "dashboards", "tags": ["zerofleet"], "asDropdown": True,
                       "title": "zerofleet"}],
            "panels": self.panels,
        }


def fleet():
    d = Dashboard("zf-fleet", "zerofleet / Fleet throughput",
                  "The whole loop at a glance: games, evaluations, replay traffic, training.")
    d.panel("Games finished per second", [
        ("sum(rate(zf_actor_games_total[1m]))", "all actors"),
    ], unit="ops")
    d.panel("Leaf evaluations per second", [
        ("sum(rate(zf_actor_leaf_evaluations_total[1m]))", "requested by actors"),
        ("sum(rate(zf_inference_evaluations_total[1m]))", "served by inference"),
    ], unit="ops")
    d.panel("Moves and simulations per second", [
        ("sum(rate(zf_actor_moves_total[1m]))", "moves"),
        ("sum(rate(zf_actor_simulations_total[1m]))", "simulations"),
    ], unit="ops")
    d.panel("Actor share of time waiting for evaluations", [
        ("sum by (instance) (rate(zf_actor_evaluation_wait_seconds_total[1m]))", "{{instance}}"),
    ], unit="percentunit",
        description="Seconds of evaluation wait per second of wall time, per actor process "
                    "(summed over its workers, so it can exceed 100%).")
    d.panel("Replay traffic (positions per second)", [
        ("sum(rate(zf_replay_inserted_positions_total[1m]))", "inserted"),
        ("sum(rate(zf_replay_sampled_positions_total[1m]))", "sampled"),
    ], unit="ops")
    d.panel("Learner steps per second", [
        ("sum(rate(zf_learner_steps_total[1m]))", "steps"),
    ], unit="ops")
    d.panel("Evaluation requests in flight", [
        ("sum(zf_actor_requests_in_flight)", "all actors"),
        ("sum(zf_inference_queued_rows)", "rows queued at inference"),
    ])
    d.panel("Actor processes and games per minute each", [
        ("count(zf_actor_games_total)", "actor processes"),
        ("60 * rate(zf_actor_games_total[1m])", "{{instance}} games/min"),
    ])
    # The faults of docs/reliability.md, as they happen (their alerts: ZfProcessRestarted,
    # ZfTargetMissedScrapes, ZfActorReplayRetrying, ZfReplayInsertsRefused).
    d.panel("Faults: restarts and missed scrapes", [
        ("changes(zf_process_start_time_seconds[5m])", "restarts {{job}} {{instance}}"),
        ("1 - min_over_time(up{job=~\"zf-.*\"}[1m])", "missed scrape {{job}} {{instance}}"),
    ], description="A restart (crash, kill, rolling upgrade) counts 1 for 5 minutes; a missed "
                   "scrape (process down or stopped, host partitioned) shows as 1.")
    d.panel("Faults: replay inserts retried and refused", [
        ("sum by (instance) (rate(zf_replay_writer_insert_retries_total[1m]))",
         "retried by {{instance}}"),
        ("sum by (instance, reason) (rate(zf_replay_log_write_errors_total[1m]))",
         "refused by {{instance}} ({{reason}})"),
        ("sum(rate(zf_replay_writer_acked_games_total[1m]))", "games acknowledged"),
    ], unit="ops",
        description="Actors retry inserts while a shard is down, unreachable or refusing; a "
                    "shard refuses group commits on a full disk (disk_full) or after a failed "
                    "write (io). Acknowledged games should dip and come back.")
    d.panel("Faults: games waiting for replay in each actor", [
        ("sum by (instance) (zf_replay_writer_unacknowledged_games)", "{{instance}}"),
        ("max by (instance) (zf_replay_writer_unacknowledged_games_limit)",
         "in-memory bound of {{instance}}"),
    ], description="Games an actor holds, in memory or in its spool, that no replay shard has "
                   "acknowledged yet: a few dozen while the shards keep up; it grows while a "
                   "shard is down or cut off and drains when the shard is back. Past its "
                   "in-memory bound the actor spools (or blocks without a spool); the alert "
                   "ZfActorReplayBacklog fires at half of it.")
    return d


def inference():
    d = Dashboard("zf-inference", "zerofleet / Inference",
                  "Dynamic batching: batch sizes and fill, where requests spend their time, "
                  "and how busy the network is.")
    d.panel("Batch size distribution (batches per second by rows)", [
        ("sum by (le) (rate(zf_inference_batch_rows_bucket[1m]))", "{{le}}"),
    ], kind="heatmap")
    d.panel("Batch fill (mean rows / --max_batch)", [
        ("(rate(zf_inference_batch_rows_sum[1m]) / rate(zf_inference_batch_rows_count[1m])) "
         "/ on(instance, job) zf_inference_max_batch_rows", "{{instance}}"),
    ], unit="percentunit", max_value=1)
    d.panel("Rows per batch", [
        ("rate(zf_inference_batch_rows_sum[1m]) / rate(zf_inference_batch_rows_count[1m])",
         "mean {{instance}}"),
        (quantile(0.5, "zf_inference_batch_rows"), "p50 {{instance}}"),
        (quantile(0.99, "zf_inference_batch_rows"), "p99 {{instance}}"),
    ])
    d.panel("Duty cycle (forward-pass seconds per second)", [
        ("rate(zf_inference_compute_seconds_sum[1m])", "{{instance}}"),
    ], unit="percentunit",
        description="Share of wall time a forward pass runs. With --workers above 1 passes "
                    "overlap and this can exceed 100%.")
    d.panel("Queue wait (submission to dispatch)", [
        (quantile(0.5, "zf_inference_queue_wait_seconds"), "p50 {{instance}}"),
        (quantile(0.99, "zf_inference_queue_wait_seconds"), "p99 {{instance}}"),
    ], unit="s")
    d.panel("Compute latency (one forward pass)", [
        (quantile(0.5, "zf_inference_compute_seconds"), "p50 {{instance}}"),
        (quantile(0.99, "zf_inference_compute_seconds"), "p99 {{instance}}"),
    ], unit="s")
    d.panel("Request latency (submission to answer)", [
        (quantile(0.5, "zf_inference_request_seconds"), "p50 {{instance}}"),
        (quantile(0.99, "zf_inference_request_seconds"), "p99 {{instance}}"),
    ], unit="s")
    d.panel("Evaluations per second", [
        ("rate(zf_inference_evaluations_total[1m])", "{{instance}}"),
    ], unit="ops")
    d.panel("Requests by status code", [
        ("sum by (code) (rate(zf_inference_requests_total[1m]))", "{{code}}"),
    ], unit="reqps", stack=True)
    d.panel("Queued rows and open streams", [
        ("zf_inference_queued_rows", "queued rows {{instance}}"),
        ("zf_inference_open_streams", "open streams {{instance}}"),
    ])
    return d


def replay():
    d = Dashboard("zf-replay", "zerofleet / Replay",
                  "Replay shards: window size, inserts and samples, the rate limiter, rejections.")
    d.panel("Positions in the window", [
        ("zf_replay_positions_stored", "{{instance}}"),
        ("sum(zf_replay_positions_stored)", "all shards"),
    ])
    d.panel("Games in the window", [
        ("zf_replay_games_stored", "{{instance}}"),
    ])
    d.panel("Inserts (games per second)", [
        ("rate(zf_replay_inserts_total[1m])", "{{instance}}"),
        ("rate(zf_replay_duplicates_total[1m])", "duplicates {{instance}}"),
    ], unit="ops")
    d.panel("Positions inserted and sampled per second", [
        ("rate(zf_replay_inserted_positions_total[1m])", "inserted {{instance}}"),
        ("rate(zf_replay_sampled_positions_total[1m])", "sampled {{instance}}"),
    ], unit="ops")
    d.panel("Samples per inserted position", [
        ("rate(zf_replay_sampled_positions_total[1m]) "
         "/ rate(zf_replay_inserted_positions_total[1m])", "{{instance}}"),
        ("sum(rate(zf_replay_sampled_positions_total[1m])) "
         "/ sum(rate(zf_replay_inserted_positions_total[1m]))", "all shards"),
    ], description="Compare with --samples_per_insert; the rate limiter keeps the cumulative "
                   "ratio within --error_buffer of it.")
    d.panel("Rate limiter: blocked caller-seconds per second", [
        ("rate(zf_replay_rate_limiter_wait_seconds_total[1m])", "{{operation}} {{instance}}"),
    ], unit="s")
    d.panel("Rejections and refused calls per second", [
        ("sum by (reason) (rate(zf_replay_rejections_total[1m]))", "rejected: {{reason}}"),
        ("sum by (rpc) (rate(zf_replay_service_invalid_requests_total[1m]))",
         "invalid: {{rpc}}"),
        ("sum by (rpc) (rate(zf_replay_service_overloaded_total[1m]))", "overloaded: {{rpc}}"),
    ], unit="ops")
    d.panel("Insert acknowledgement and fsync latency (p99)", [
        (quantile(0.99, "zf_replay_ack_seconds"), "ack {{instance}}"),
        (quantile(0.99, "zf_replay_fsync_seconds"), "fsync {{instance}}"),
    ], unit="s")
    d.panel("Log on disk", [
        ("zf_replay_log_bytes", "{{instance}}"),
    ], unit="bytes")
    return d


def learner():
    d = Dashboard("zf-learner", "zerofleet / Learner",
                  "Training: steps, loss by head, data wait, published model versions.")
    d.panel("Steps per second", [
        ("rate(zf_learner_steps_total[1m])", "{{instance}}"),
    ], unit="ops")
    d.panel("Loss", [
        ("zf_learner_loss", "{{head}}"),
    ])
    d.panel("Data wait share (target under 5%)", [
        ("rate(zf_learner_data_wait_seconds_total[1m])", "{{instance}}"),
    ], unit="percentunit", max_value=1)
    d.panel("Step time", [
        (quantile(0.5, "zf_learner_step_seconds"), "p50 {{instance}}"),
        (quantile(0.99, "zf_learner_step_seconds"), "p99 {{instance}}"),
    ], unit="s")
    d.panel("Samples trained on per second", [
        ("rate(zf_learner_samples_total[1m])", "{{instance}}"),
    ], unit="ops")
    d.panel("Learning rate", [
        ("zf_learner_learning_rate", "{{instance}}"),
    ])
    d.panel("Published model version", [
        ("zf_learner_published_version", "{{instance}}"),
    ], width=24)
    return d


def staleness():
    d = Dashboard("zf-staleness", "zerofleet / Model staleness",
                  "How far behind the learner's latest model the inference servers and actors "
                  "play (in versions).")
    d.panel("Model versions", [
        ("max(zf_learner_published_version)", "published by learner"),
        ("zf_inference_model_version", "serving: {{instance}}"),
        ("min(zf_actor_model_version)", "oldest seen by an actor"),
    ], width=24)
    d.panel("Inference staleness (versions behind the learner)", [
        ("scalar(max(zf_learner_published_version)) - zf_inference_model_version",
         "{{instance}}"),
    ])
    d.panel("Actor staleness (versions behind the learner)", [
        ("scalar(max(zf_learner_published_version)) - zf_actor_model_version",
         "{{instance}}"),
    ])
    d.panel("Game length (moves)", [
        (quantile(0.5, "zf_actor_game_length_moves", by="job"), "p50"),
        (quantile(0.9, "zf_actor_game_length_moves", by="job"), "p90"),
    ])
    d.panel("Resignations per finished game", [
        ("sum(rate(zf_actor_resignations_total[5m])) / sum(rate(zf_actor_games_total[5m]))",
         "all actors"),
    ], unit="percentunit", max_value=1)
    return d


def strength():
    d = Dashboard("zf-strength", "zerofleet / Strength",
                  "Playing strength over time from the evaluator (zf evaluator, or zf run's): "
                  "Elo of the newest and best versions with 95% intervals (random = 0), the "
                  "versions rated, best and served, games by result and gate decisions.")
    elo = 'zf_evaluator_elo{{which="{}",bound="{}"}}'
    d.panel("Elo of the newest rated version (95% interval)", [
        (elo.format("newest", "estimate"), "newest {{instance}}"),
        (elo.format("newest", "lower"), "lower {{instance}}"),
        (elo.format("newest", "upper"), "upper {{instance}}"),
    ], description="All evaluation games rated at once (BayesElo's model, anchored at random = "
                   "0); a version's rating moves as later versions play it.")
    d.panel("Elo of the best version (95% interval)", [
        (elo.format("best", "estimate"), "best {{instance}}"),
        (elo.format("best", "lower"), "lower {{instance}}"),
        (elo.format("best", "upper"), "upper {{instance}}"),
    ], description="The best: with --gate the last version the SPRT accepted, otherwise the "
                   "highest-rated version whose network is still kept.")
    d.panel("Versions: published, rated, best and served", [
        ("max(zf_learner_published_version)", "published by learner"),
        ('zf_evaluator_version{which="newest"}', "newest rated {{instance}}"),
        ('zf_evaluator_version{which="best"}', "best {{instance}}"),
        ("zf_inference_model_version", "served by {{instance}}"),
    ])
    d.panel("Elo gap: best minus newest", [
        (f'{elo.format("best", "estimate")} - ignoring(which) {elo.format("newest", "estimate")}',
         "{{instance}}"),
    ], description="Above 0 the newest version rates below the best; ZfStrengthDropped fires "
                   "when even its upper bound is 100 Elo below for 30 minutes over 3 versions.")
    d.panel("Evaluation games per 10 minutes by result (newer version's view)", [
        ("sum by (result) (increase(zf_evaluator_games_total[10m]))", "{{result}}"),
    ], stack=True)
    d.panel("Gate decisions per hour", [
        ("sum by (decision) (increase(zf_evaluator_gate_decisions_total[1h]))", "{{decision}}"),
    ], description="Only with --gate: each new version is accepted (then served) or rejected "
                   "by an SPRT against the best.")
    d.panel("Resignation false positives (played-out would-be resignations)", [
        ("zf_actor_resign_false_positive_ratio", "{{instance}}"),
    ], unit="percentunit", max_value=1, width=24,
        description="ZfResignFalsePositives fires above 5% for 15 minutes.")
    return d


DASHBOARDS = [fleet, inference, replay, learner, staleness, strength]


def render():
    files = {}
    for make in DASHBOARDS:
        dashboard = make()
        name = dashboard.uid.removeprefix("zf-") + ".json"
        files[name] = json.dumps(dashboard.to_json(), indent=2, sort_keys=True) + "\n"
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the files on disk instead of writing them")
    args = parser.parse_args()
    files = render()
    if args.check:
        stale = [name for name, text in files.items()
                 if not (OUT_DIR / name).exists() or (OUT_DIR / name).read_text() != text]
        extra = sorted(p.name for p in OUT_DIR.glob("*.json") if p.name not in files)
        if stale or extra:
            print(f"dashboards out of date: {stale} extra: {extra}; "
                  "run deploy/grafana/generate_dashboards.py", file=sys.stderr)
            return 1
        print(f"{len(files)} dashboards match the generator")
        return 0
    OUT_DIR.mkdir(exist_ok=True)
    for name, text in files.items():
        (OUT_DIR / name).write_text(text)
    print(f"wrote {len(files)} dashboards to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
