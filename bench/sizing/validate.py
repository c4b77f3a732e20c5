"""The fleet model against what this machine runs: tests/multihost's namespace fleet at several
actor and inference server counts, and `zf run`. For each: the model's prediction from a
measured profile (bench/sizing/profiles/, `sizing measure`), the fleet's measured games/s, the
error, and where the CPU went (each role's cores, from /proc), so that a miss can be explained.
"""
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import fleet_model
import measure

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "multihost"))
import fleetlib  # noqa: E402


def acked_count(fleet):
    n = 0
    for _, path in fleet.acked_logs():
        if path.exists():
            n += path.read_bytes().count(b"\n")
    return n


def snapshot(fleet):
    hosts = {}
    for name, h in fleet.hosts.items():
        pid = h.pid()
        entry = {"role": h.role}
        if pid is not None:
            try:
                entry["cpu"] = measure.cpu_seconds(pid)
            except (FileNotFoundError, ProcessLookupError):
                pass
        entry["metrics"] = h.scrape() or {}
        hosts[name] = entry
    return {"t": time.monotonic(), "acked": acked_count(fleet), "hosts": hosts}


def fleet_measurement(zf, actors, servers, seconds, warmup, log, env=None):
    run_dir = pathlib.Path(tempfile.mkdtemp(prefix="zf_sizing_fleet_"))
    fleetlib.cleanup()
    fleet = fleetlib.Fleet(run_dir, zf, actors=actors, inference_servers=servers, env=env)
    try:
        fleet.up()
        time.sleep(warmup)
        a = snapshot(fleet)
        time.sleep(seconds)
        b = snapshot(fleet)
        crashed = fleet.check_crashes()
        if crashed:
            raise RuntimeError(f"crashed during the measurement: {crashed}")
    finally:
        fleet.down()
    dt = b["t"] - a["t"]

    def increase(role, name, **labels):
        s = 0.0
        for host, y in b["hosts"].items():
            if y["role"] != role:
                continue
            x = a["hosts"][host]["metrics"]
            s += (measure.total(y["metrics"], name, **labels)
                  - measure.total(x, name, **labels))
        return s

    cores = {}
    for host, y in b["hosts"].items():
        if "cpu" in y and "cpu" in a["hosts"][host]:
            role = y["role"]
            cores[role] = cores.get(role, 0.0) + (y["cpu"] - a["hosts"][host]["cpu"]) / dt
    batches = increase("inference", "zf_inference_batch_rows_count")
    return {
        "games_per_s": (b["acked"] - a["acked"]) / dt,
        "evaluations_per_s": increase("inference", "zf_inference_evaluations_total") / dt,
        "server_batch": (increase("inference", "zf_inference_batch_rows_sum") / batches
                         if batches else None),
        "learner_steps_per_s": increase("learner", "zf_learner_steps_total") / dt,
        "cores_by_role": cores,
        "seconds": dt,
    }


def validate_fleet(profile, actor_counts, server_counts, seconds, warmup, report, zf, log,
                   env=None):
    why_not = fleetlib.can_make_namespaces()
    if why_not is not None:
        print(f"sizing validate: {why_not}")
        return 77
    rows = []
    for servers in server_counts:
        for actors in actor_counts:
            p = fleet_model.scale(profile, **{"actors.processes": actors,
                                              "inference.servers": servers})
            predicted = fleet_model.predict(p)
            log(f"fleet: {actors} actor(s), {servers} inference server(s) ...")
            got = fleet_measurement(zf, actors, servers, seconds, warmup, log, env=env)
            error = predicted["games_per_s"] / got["games_per_s"] - 1
            rows.append({"actors": actors, "servers": servers, "predicted": predicted,
                         "measured": got, "error": error})
            log(f"  predicted {predicted['games_per_s']:.0f} games/s, measured "
                f"{got['games_per_s']:.0f} ({error:+.0%}); cores by role: "
                + ", ".join(f"{k} {v:.2f}" for k, v in sorted(got["cores_by_role"].items())))
    print_validation(rows)
    if report:
        pathlib.Path(report).write_text(json.dumps({"profile": profile, "env": env or {},
                                                    "rows": rows}, indent=1))
    return 0


def repredict(report, out=None):
    """The model again over a saved report's profile and measurements (after a model change)."""
    rows = []
    for r in report["rows"]:
        p = fleet_model.scale(report["profile"], **{"actors.processes": r["actors"],
                                                    "inference.servers": r["servers"]})
        predicted = fleet_model.predict(p)
        rows.append(dict(r, predicted=predicted,
                         error=predicted["games_per_s"] / r["measured"]["games_per_s"] - 1))
    print_validation(rows)
    if out:
        pathlib.Path(out).write_text(json.dumps(dict(report, rows=rows), indent=1))
    return 0


def print_validation(rows):
    print("| actors | servers | predicted games/s | measured games/s | error | predicted batch "
          "| measured batch | bottleneck (model) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        mb = r["measured"]["server_batch"]
        print(f"| {r['actors']} | {r['servers']} | {r['predicted']['games_per_s']:.0f} | "
              f"{r['measured']['games_per_s']:.0f} | {r['error']:+.0%} | "
              f"{r['predicted']['server_batch']:.1f} | {mb:.1f} | "
              f"{r['predicted']['bottleneck']} |" if mb is not None else
              f"| {r['actors']} | {r['servers']} | ... | no batches |")
    errors = [abs(r["error"]) for r in rows]
    if errors:
        print(f"mean absolute error {sum(errors) / len(errors):.0%}, largest {max(errors):.0%}")


def validate_run(profile, minutes, report, zf_torch, log):
    """`zf run --game connect4` for `minutes`: games/s after its first minute, against the model."""
    run_dir = pathlib.Path(tempfile.mkdtemp(prefix="zf_sizing_run_"))
    predicted = fleet_model.predict(profile)
    log(f"zf run --game connect4 --minutes {minutes} ...")
    out = subprocess.run([zf_torch, "run", "--game", "connect4", f"--minutes={minutes}",
                          f"--dir={run_dir}", "--seed=7", "--progress_s=10"],
                         capture_output=True, text=True, timeout=minutes * 60 + 600)
    if out.returncode != 0:
        raise RuntimeError(f"zf run failed ({out.returncode}):\n{out.stderr[-2000:]}")
    # DIR/progress.jsonl: one object per progress line with the games so far.
    points = []
    for line in (run_dir / "progress.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "progress":
            points.append((event["elapsed_s"], event["games"]))
    late = [p for p in points if p[0] >= 60]  # after the first minute (warm-up, filling replay)
    if len(late) < 2:
        raise RuntimeError(f"zf run wrote too few progress lines to measure games/s: {points}")
    measured = (late[-1][1] - late[0][1]) / (late[-1][0] - late[0][0])
    error = predicted["games_per_s"] / measured - 1
    print(f"zf run connect4: predicted {predicted['games_per_s']:.1f} games/s, measured "
          f"{measured:.1f} ({error:+.0%}); model bottleneck: {predicted['bottleneck']}")
    if report:
        pathlib.Path(report).write_text(json.dumps(
            {"profile": profile, "predicted": predicted, "measured_games_per_s": measured,
             "error": error}, indent=1))
    return 0
