"""The sizing table of docs/sizing.md: Go networks on one to eight GPUs, from the fleet model
with this machine's measured CPU costs and assumed GPU figures (profiles/gpu-h100-assumed.json,
whose notes say where each comes from).

For each network and GPU count (one inference server per GPU) it finds the actor cores that
bring the servers to 90% of their capacity (their evaluations/s at max_batch back to back, or
what their hosts' cores carry if less; each core one actor worker), then reports what the fleet
does there, the learner GPUs it keeps busy, and the replay shards its inserts need.
"""
import json
import math
import pathlib

import fleet_model

HERE = pathlib.Path(__file__).resolve().parent
PROFILES = HERE / "profiles"

# The one H100 run's raw pass, Connect Four 4 x 64, bf16, CUDA graphs, run 1
# (docs/benchmarks.md, "GPU headline", 2026-11-26): batch -> evaluations/s.
H100_CONNECT4 = [(64, 566088), (256, 1808262), (1024, 3698481), (2048, 4701692),
                 (4096, 4795896)]
CONNECT4_4X64_FLOPS = 24.9e6


def fit_h100():
    """Least-squares t(b) = launch + slope b over the H100 run; the largest relative error."""
    pts = [(b, b / v) for b, v in H100_CONNECT4]
    n = len(pts)
    mb = sum(b for b, _ in pts) / n
    mt = sum(t for _, t in pts) / n
    slope = sum((b - mb) * (t - mt) for b, t in pts) / sum((b - mb) ** 2 for b, _ in pts)
    launch = mt - slope * mb
    worst = max(abs((launch + slope * b) / t - 1) for b, t in pts)
    return launch, slope, worst


def gpu_profile(assumed, net, servers):
    g, srv, ln = assumed["gpu"], assumed["server"], assumed["learner"]
    fit_launch, fit_slope, _ = fit_h100()
    actor = json.loads((PROFILES / net["actor_profile"]).read_text())
    flops = net["flops_per_position"]
    if net.get("forward") == "h100_connect4_fit":  # the measured network itself
        launch, per_row = fit_launch, fit_slope
    else:
        launch = fit_launch * net["blocks"] / 4  # the fitted network has 4 blocks
        per_row = flops / (g["peak_flops"] * net["efficiency"])
    forward = [[1, launch + per_row], [4096, launch + 4096 * per_row]]
    # Training at the forward pass's rate per FLOP: 3x its FLOPs per sample.
    step = 3 * ln["batch"] * per_row + g["learner_overhead_s_per_step"]
    sp = actor["selfplay"]
    return flops, {
        "selfplay": {"moves_per_game": net["moves_per_game"],
                     "evals_per_move": sp["evals_per_move"],
                     "actor_cpu_s_per_eval": sp["actor_cpu_s_per_eval"]},
        "actors": dict(actor["actors"], processes=1, workers=1),
        "inference": {"servers": servers, "forward": forward, "max_batch": srv["max_batch"],
                      "workers": srv["workers"], "batching": "tuned",
                      "host_cpu_s_per_eval": actor["inference"]["host_cpu_s_per_eval"],
                      "host_cores": srv["host_cores"]},
        "replay": {"insert_cpu_s_per_position": net.get("replay_insert_cpu_s_per_position")
                   or actor["replay"]["insert_cpu_s_per_position"],
                   "sample_cpu_s_per_position": actor["replay"]["sample_cpu_s_per_position"],
                   "cores_per_shard": assumed["replay"]["cores_per_shard"], "shards": 1},
        "learner": {"batch": ln["batch"], "samples_per_insert": ln["samples_per_insert"],
                    "step_s": step, "threads": 0, "mode": "free"},
    }, step


def capacity(profile):
    """The servers' evaluations/s: their passes at max_batch back to back, or what their hosts'
    cores carry, whichever is less."""
    inf = profile["inference"]
    b = inf["max_batch"]
    device = inf["servers"] * b / fleet_model.forward_time(inf["forward"], b)
    host = inf["servers"] * inf["host_cores"] / inf["host_cpu_s_per_eval"]
    return min(device, host)


def cores_for(profile, target):
    """The fewest actor cores (processes of one worker) whose fleet evaluates `target` x the
    servers' capacity, and the prediction there."""
    want = target * capacity(profile)

    def at(n):
        return fleet_model.predict(fleet_model.scale(profile, **{"actors.processes": n}))

    def enough(n):
        return at(n)["evaluations_per_s"] >= want
    lo, hi = 1, 1
    while not enough(hi):
        lo, hi = hi, hi * 2
        if hi > 1 << 20:
            raise fleet_model.ModelError("no actor count reaches the target")
    while hi - lo > max(1, lo // 100):
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi, at(hi)


def rows(assumed):
    out = []
    for net in assumed["networks"]:
        for gpus in (1, 2, 4, 8):
            flops, profile, step = gpu_profile(assumed, net, gpus)
            # Enough replay shards for the servers' capacity, each at most 70% busy.
            sp = profile["selfplay"]
            positions_at_capacity = capacity(profile) / sp["evals_per_move"]
            shard_rate = (assumed["replay"]["cores_per_shard"]
                          / profile["replay"]["insert_cpu_s_per_position"] * 0.7)
            profile["replay"]["shards"] = max(1, math.ceil(positions_at_capacity / shard_rate))
            cores, pred = cores_for(profile, 0.9)
            learner_positions = assumed["learner"]["batch"] / step / \
                assumed["learner"]["samples_per_insert"]
            out.append({
                "network": f"{net['game']} {net['blocks']}x{net['filters']}",
                "forward": ("measured (H100 fit)" if net.get("forward") == "h100_connect4_fit"
                            else f"assumed, efficiency {net['efficiency']}"),
                "sims": net["sims"], "gpus": gpus, "gflop_per_position": flops / 1e9,
                "actor_cores": cores,
                "evaluations_per_s": pred["evaluations_per_s"],
                "server_batch": pred["server_batch"], "server_duty": pred["server_duty"],
                "latency_ms": pred["latency_s"] * 1e3,
                "positions_per_s": pred["positions_per_s"], "games_per_s": pred["games_per_s"],
                "learner_gpus": pred["positions_per_s"] / learner_positions,
                "replay_shards": profile["replay"]["shards"],
                "host_cores_per_server": pred["server_evaluations_per_s"]
                * profile["inference"]["host_cpu_s_per_eval"],
                "bottleneck": pred["bottleneck"],
            })
    return out


def main(as_json):
    assumed = json.loads((PROFILES / "gpu-h100-assumed.json").read_text())
    launch, slope, worst = fit_h100()
    table = rows(assumed)
    if as_json:
        print(json.dumps({"h100_connect4_fit": {"launch_s": launch, "slope_s_per_row": slope,
                                                 "efficiency": CONNECT4_4X64_FLOPS / slope
                                                 / assumed["gpu"]["peak_flops"],
                                                 "largest_error": worst},
                          "rows": table}, indent=1))
        return 0
    print(f"H100 Connect Four fit: t(b) = {launch * 1e6:.0f} us + {slope * 1e6:.3f} us x b "
          f"(largest error {worst:.1%}); efficiency "
          f"{CONNECT4_4X64_FLOPS / slope / assumed['gpu']['peak_flops']:.3f} of the bf16 peak")
    print("| network | GPU pass | sims | GPUs | actor cores for 90% | evaluations/s | batch "
          "| latency ms | positions/s | games/s | learner GPUs | replay shards "
          "| host cores/server | bottleneck |")
    print("| --- | --- |" + " ---: |" * 11 + " --- |")
    for r in table:
        print(f"| {r['network']} ({r['gflop_per_position']:.2f} GFLOP) | {r['forward']} | "
              f"{r['sims']} | "
              f"{r['gpus']} | {r['actor_cores']:,} | {r['evaluations_per_s']:,.0f} | "
              f"{r['server_batch']:.0f} | {r['latency_ms']:.1f} | {r['positions_per_s']:,.0f} | "
              f"{r['games_per_s']:.1f} | {r['learner_gpus']:.2f} | {r['replay_shards']} | "
              f"{r['host_cores_per_server']:.2f} | {r['bottleneck']} |")
    return 0
