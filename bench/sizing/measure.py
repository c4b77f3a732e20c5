"""Measures a fleet model profile's inputs on this machine, each from a benchmark of one
component (never from the fleet the model is checked against):

  selfplay, rows per request, server host, replay insert: a mini-fleet on loopback of
      `zf inference --backend null` (answers at no cost), `zf replay` shards and one `zf actor`
      with the fleet's settings: the actor's CPU per leaf evaluation, evaluations per move, moves
      per game, the null server's CPU per evaluation (its host path, what `zf bench serving`
      measures, here at the actor's own request size) and the shards' CPU per position inserted;
  forward: `zf-torch bench inference --json` raw (t(b) = b / evaluations per second at b);
  learner: `learner_bench` compute-only steps/s (bench/sizing needs its BLOCKS FILTERS arguments);
  replay sample: `zf bench replay --json` (one core's sampling rate).

Processes' CPU is read from /proc/PID/stat (user + system), counters from their /metrics.
"""
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "multihost"))
import fleetlib  # noqa: E402
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    """User + system CPU seconds of a live process (all its threads)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def scrape(port):
    """One /metrics endpoint on loopback, parsed as fleetlib.parse_metrics does."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return fleetlib.parse_metrics(text)


def total(samples, name, **labels):
    """The sum of a metric's samples whose labels include `labels` (0 if none)."""
    return fleetlib.metric(samples, name, **labels) or 0.0


def wait_for_metrics(port, proc, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[:2]} exited with {proc.returncode}")
        try:
            return scrape(port)
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{proc.args[:2]}: no /metrics on {port} within {timeout} s")


def json_line(text):
    """The last line of `text` that is a JSON object."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in:\n" + text[-2000:])


def selfplay_inputs(zf, game, actor_flags, replay_flags, seconds=20, warmup=5, shards=2,
                    server_argv=None, server_env=None):
    """The mini-fleet measurement (see the module's docstring). `server_argv`: the inference
    server's command before its --listen flags (default: zf inference --backend null)."""
    work = pathlib.Path(tempfile.mkdtemp(prefix="zf_sizing_"))
    procs = []
    try:
        inf_port, inf_metrics = free_port(), free_port()
        server = subprocess.Popen(
            (server_argv or [zf, "inference", "--backend", "null", "--game", game])
            + [f"--listen=127.0.0.1:{inf_port}", f"--metrics_listen=127.0.0.1:{inf_metrics}",
               f"--log_file={work}/inference.log"], stdout=subprocess.DEVNULL,
            env=dict(os.environ, **(server_env or {})))
        procs.append(server)
        shard_ports = []
        for k in range(shards):
            port, mport = free_port(), free_port()
            p = subprocess.Popen(
                [zf, "replay", f"--listen=127.0.0.1:{port}", f"--metrics_listen=127.0.0.1:{mport}",
                 f"--dir={work}/replay-{k}", f"--log_file={work}/replay-{k}.log"] + replay_flags,
                stdout=subprocess.DEVNULL)
            procs.append(p)
            shard_ports.append((p, port, mport))
        wait_for_metrics(inf_metrics, server)
        for p, _, mport in shard_ports:
            wait_for_metrics(mport, p)
        actor_metrics = free_port()
        actor = subprocess.Popen(
            [zf, "actor", "--game", game, f"--inference=127.0.0.1:{inf_port}",
             "--replay=" + ",".join(f"127.0.0.1:{port}" for _, port, _ in shard_ports),
             "--games=0", f"--metrics_listen=127.0.0.1:{actor_metrics}",
             f"--log_file={work}/actor.log", "--seed=1"] + actor_flags,
            stdout=subprocess.DEVNULL)
        procs.append(actor)
        wait_for_metrics(actor_metrics, actor)
        time.sleep(warmup)

        def snapshot():
            return {"t": time.monotonic(), "actor": scrape(actor_metrics),
                    "server": scrape(inf_metrics),
                    "shards": [scrape(m) for _, _, m in shard_ports],
                    "cpu": {"actor": cpu_seconds(actor.pid), "server": cpu_seconds(server.pid),
                            "replay": sum(cpu_seconds(p.pid) for p, _, _ in shard_ports)}}

        a = snapshot()
        time.sleep(seconds)
        b = snapshot()

        def d(role, name, **labels):
            if role == "shards":
                return sum(total(y, name, **labels) - total(x, name, **labels)
                           for x, y in zip(a["shards"], b["shards"]))
            return total(b[role], name, **labels) - total(a[role], name, **labels)

        evals = d("actor", "zf_actor_leaf_evaluations_total")
        moves = d("actor", "zf_actor_moves_total")
        games = d("actor", "zf_actor_games_total")
        requests = d("server", "zf_inference_requests_total", code="ok")
        server_evals = d("server", "zf_inference_evaluations_total")
        positions = d("shards", "zf_replay_inserted_positions_total")
        batches = d("server", "zf_inference_batch_rows_count")
        if min(evals, moves, requests) <= 0:
            logs = "".join(f"\n{f.name}: " + f.read_text()[-600:] for f in work.glob("*.log"))
            raise RuntimeError("the mini-fleet made no progress; its logs:" + logs)
        # Long games (Go 19x19 at hundreds of simulations) may finish none in the window: their
        # per-game figures are then None.
        per_game = games > 0 and positions > 0
        return {
            "seconds": b["t"] - a["t"],
            "games_per_s": games / (b["t"] - a["t"]),
            "moves_per_game": moves / games if per_game else None,
            "evals_per_move": evals / moves,
            "positions_per_game": positions / games if per_game else None,
            "actor_cpu_s_per_eval": (b["cpu"]["actor"] - a["cpu"]["actor"]) / evals,
            "rows_per_request": server_evals / requests,
            "host_cpu_s_per_eval": (b["cpu"]["server"] - a["cpu"]["server"]) / server_evals,
            "replay_cpu_s_per_position": ((b["cpu"]["replay"] - a["cpu"]["replay"]) / positions
                                          if per_game else None),
            "server_cpu_s_per_batch": (b["cpu"]["server"] - a["cpu"]["server"]) / batches,
            "server_batch": d("server", "zf_inference_batch_rows_sum") / batches,
        }
    finally:
        for p in procs[::-1]:
            p.terminate()
        for p in procs[::-1]:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


def forward_table(zf_torch, game, blocks, filters, threads=1, max_batch=256, seconds=0.5):
    """[[batch, seconds]]: one raw forward pass's time on this machine's CPU. The bench runs
    raw_callers passes at once (the server's two workers), each on a core of its own here, so
    one pass takes raw_callers x batch / (their evaluations/s together)."""
    out = subprocess.run(
        [zf_torch, "bench", "inference", "--game", game, f"--blocks={blocks}",
         f"--filters={filters}", f"--intra_op_threads={threads}", f"--max_batch={max_batch}",
         f"--seconds={seconds}", "--device=cpu", "--json"],
        check=True, capture_output=True, text=True, timeout=600)
    report = json_line(out.stdout)
    callers = report.get("raw_callers", 1)
    return [[r["batch"], callers * r["batch"] / r["evals_per_sec"]] for r in report["raw"]]


def learner_step_s(learner_bench, game, blocks, filters, batch, threads=1, steps=40):
    out = subprocess.run([learner_bench, str(steps), str(batch), "2", str(threads), "cpu", game,
                          str(blocks), str(filters)],
                         check=True, capture_output=True, text=True, timeout=600)
    return 1 / json_line(out.stdout)["compute_steps_per_s"]


def replay_sample_cpu_s(zf, seconds=2):
    """One thread's CPU per position sampled (`zf bench replay`: Connect Four-shaped records)."""
    work = tempfile.mkdtemp(prefix="zf_sizing_replay_")
    try:
        out = subprocess.run([zf, "bench", "replay", f"--seconds={seconds}", "--capacity=200000",
                              f"--dir={work}/shard", "--json"],
                             check=True, capture_output=True, text=True, timeout=600)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 / json_line(out.stdout)["sample_positions_per_sec"]


def machine():
    cpu = "unknown"
    m = re.search(r"^model name\s*:\s*(.+)$", pathlib.Path("/proc/cpuinfo").read_text(),
                  flags=re.MULTILINE)
    if m:
        cpu = m.group(1).strip()
    return f"{cpu}, {os.cpu_count()} cores"
