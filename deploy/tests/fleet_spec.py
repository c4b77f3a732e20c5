"""What the deploy/ files must agree with: each component's `zf` subcommand, flags, ports and
drain time, and the metric names the processes export. The deploy tests check the Kubernetes,
compose, Prometheus and Grafana files against this one table (and, where the `zf` binary is
given, check this table against the binary's own `zf COMMAND --help`).
"""
import re
import subprocess

# Fixed ports (docs/operations.md). `grpc` is None for actors: they serve only metrics.
# `flags`: every flag the subcommand accepts (as documented for it); `required`: flags every
# deployment must pass. `drain_s`: the longest a clean shutdown may take after SIGTERM; grace
# periods must exceed it by GRACE_MARGIN_S. Replay's is its ReplayServer::Options::drain_timeout
# (10s); the others are budgets for finishing in-flight work (a batch, a checkpoint write, the
# acknowledgement of finished games), to be tightened when measured.
COMPONENTS = {
    "inference": {
        "grpc": 7300, "metrics": 9300, "drain_s": 15,
        "flags": {"listen", "metrics_listen", "checkpoint", "game", "blocks", "filters", "seed",
                  "model_service", "max_batch", "max_delay_us", "batch_tuning", "workers"},
        "required": {"listen", "metrics_listen"},
    },
    "replay": {
        "grpc": 7400, "metrics": 9400, "drain_s": 10,
        "flags": {"listen", "dir", "capacity", "min_size_to_sample", "samples_per_insert",
                  "error_buffer", "metrics_listen"},
        "required": {"listen", "metrics_listen", "dir", "capacity", "min_size_to_sample",
                     "samples_per_insert", "error_buffer"},
    },
    "learner": {
        "grpc": 7500, "metrics": 9500, "drain_s": 60,
        "flags": {"game", "replay", "dir", "listen", "batch_size", "steps_per_checkpoint",
                  "blocks", "filters", "metrics_listen"},
        "required": {"game", "replay", "dir", "listen", "metrics_listen"},
    },
    "actor": {
        "grpc": None, "metrics": 9600, "drain_s": 30,
        "flags": {"game", "inference", "replay", "workers", "games_per_worker", "sims",
                  "metrics_listen", "games", "acked_log"},
        # --games=0: play until SIGTERM (the flag's default, 10, is for `zf match`).
        "required": {"game", "inference", "replay", "metrics_listen", "games"},
    },
    # One replica: it owns the run's evaluation log (its volume). It serves gRPC only with
    # --gate (GATE_GRPC: the accepted versions as a model service for the inference servers);
    # drain: it finishes the evaluation game in progress.
    "evaluator": {
        "grpc": None, "metrics": 9700, "drain_s": 60,
        "flags": {"game", "model_service", "dir", "anchors", "eval_sims_per_move",
                  "games_per_opponent", "opening_moves", "seed", "gate", "sprt_elo0",
                  "sprt_elo1", "sprt_alpha", "sprt_beta", "max_gate_games", "gate_listen",
                  "metrics_listen"},
        "required": {"game", "model_service", "dir", "metrics_listen"},
    },
}
# The evaluator's gRPC port when it gates (docker-compose.gate.yml, k8s components/gate).
GATE_GRPC = 7700
# Flags the gate adds to the evaluator's command line; inference's --model_service then names
# the evaluator instead of the learner.
GATE_FLAGS = {"gate": "true", "gate_listen": f"0.0.0.0:{GATE_GRPC}"}
GRACE_MARGIN_S = 10

# Metric names the processes export (families; histograms add _bucket/_sum/_count). Inference and
# replay: from their sources (grep '"zf_' --include=*.cc). Actor and learner: their issue's
# names. zf_inference_max_batch_rows (the batcher's max_batch) is what batch fill divides by.
METRICS = {
    "zf_build_info", "zf_process_start_time_seconds",
    # inference
    "zf_inference_evaluations_total", "zf_inference_requests_total", "zf_inference_batch_rows",
    "zf_inference_queue_wait_seconds", "zf_inference_compute_seconds",
    "zf_inference_request_seconds", "zf_inference_queued_rows", "zf_inference_model_version",
    "zf_inference_open_streams", "zf_inference_streams_total",
    "zf_inference_responses_dropped_total", "zf_inference_max_batch_rows",
    "zf_inference_max_delay_seconds",
    # replay
    "zf_replay_positions_stored", "zf_replay_games_stored",
    "zf_replay_distinct_positions_stored", "zf_replay_inserts_total",
    "zf_replay_inserted_positions_total", "zf_replay_duplicates_total",
    "zf_replay_rejections_total", "zf_replay_sampled_positions_total",
    "zf_replay_rate_limiter_wait_seconds_total", "zf_replay_ack_seconds",
    "zf_replay_fsync_seconds", "zf_replay_log_bytes", "zf_replay_log_written_bytes_total",
    "zf_replay_log_write_errors_total", "zf_replay_log_quarantined_bytes",
    "zf_replay_log_segments", "zf_replay_service_invalid_requests_total",
    "zf_replay_service_overloaded_total",
    # actor
    "zf_actor_games_total", "zf_actor_moves_total", "zf_actor_simulations_total",
    "zf_actor_leaf_evaluations_total", "zf_actor_evaluation_wait_seconds_total",
    "zf_actor_requests_in_flight", "zf_actor_model_version", "zf_actor_resignations_total",
    "zf_actor_game_length_moves", "zf_actor_resign_false_positive_ratio",
    # the inference client (inference_server/client/, in each actor)
    "zf_inference_client_requests_moved_total", "zf_inference_client_servers",
    # the replay writer (replay/client/, in each actor)
    "zf_replay_writer_acked_games_total",
    "zf_replay_writer_insert_retries_total", "zf_replay_writer_rejected_games_total",
    "zf_replay_writer_unacknowledged_games", "zf_replay_writer_unacknowledged_games_limit",
    # learner
    "zf_learner_steps_total", "zf_learner_samples_total", "zf_learner_loss",
    "zf_learner_learning_rate", "zf_learner_published_version",
    "zf_learner_data_wait_seconds_total", "zf_learner_step_seconds",
    # evaluator (evaluator/evaluator.cc)
    "zf_evaluator_games_total", "zf_evaluator_elo", "zf_evaluator_version",
    "zf_evaluator_gate_decisions_total",
    # every gRPC server under mutual TLS (common/grpc/authorization.cc)
    "zf_grpc_server_calls_denied_total",
}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
# Series Prometheus makes itself.
PROMETHEUS_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}

_METRIC_TOKEN = re.compile(r"\b(zf_[a-z0-9_]+|up)\b")


def metric_names(expr):
    """The metric families an expression names (zf_* and up), histogram suffixes removed."""
    names = set()
    for token in _METRIC_TOKEN.findall(expr):
        for suffix in HISTOGRAM_SUFFIXES:
            if token.endswith(suffix) and token[: -len(suffix)] in METRICS:
                token = token[: -len(suffix)]
                break
        names.add(token)
    return names


def parse_flags(args):
    """['replay', '--listen=0.0.0.0:7400', ...] -> ('replay', {'listen': '0.0.0.0:7400', ...})."""
    command, flags = args[0], {}
    for arg in args[1:]:
        match = re.fullmatch(r"--([a-z][a-z0-9_]*)=(.*)", arg)
        if not match:
            raise ValueError(f"argument {arg!r} is not --flag=value")
        if match.group(1) in flags:
            raise ValueError(f"flag --{match.group(1)} given twice")
        flags[match.group(1)] = match.group(2)
    return command, flags


def port_of(address):
    """'host:7400' -> 7400."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{address!r} is not HOST:PORT")
    return int(port)


def binary_flags(zf, command):
    """Flags `zf COMMAND --help` lists, or None if the binary has no such command."""
    result = subprocess.run([zf, command, "--help"], capture_output=True, text=True, timeout=60)
    text = result.stdout + result.stderr
    if result.returncode != 0 or "flags:" not in text:
        return None
    return set(re.findall(r"^\s+--([a-z][a-z0-9_]*)\b", text, flags=re.MULTILINE))


class Checker:
    """Collects failures so one run reports all of them."""

    def __init__(self):
        self.failures = []
        self.checks = 0

    def expect(self, condition, message):
        self.checks += 1
        if not condition:
            self.failures.append(message)
        return condition

    def finish(self, what):
        if self.failures:
            print(f"FAIL {what}: {len(self.failures)} of {self.checks} checks failed")
            for failure in self.failures:
                print(f"  - {failure}")
            return 1
        print(f"OK {what}: {self.checks} checks passed")
        return 0


def check_against_binary(checker, zf, used):
    """Checks that the binary accepts every flag deploy/ passes. used: component -> flag names.
    Prints which commands the binary lacks (they are checked against COMPONENTS only)."""
    for component, flags_used in sorted(used.items()):
        flags = binary_flags(zf, component)
        if flags is None:
            print(f"note: {zf} has no '{component}' command yet; its flags are checked against "
                  "fleet_spec.py only")
            continue
        missing = flags_used - flags
        checker.expect(not missing, f"zf {component} does not accept "
                       f"{sorted('--' + f for f in missing)}, which deploy/ passes it")
