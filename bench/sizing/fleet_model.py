"""A mean-value model of a zerofleet fleet: games/s, each server's batch and duty cycle, the
latency an actor sees, and the bottleneck, from per-component costs that `zf bench` measures.

The fleet, as the model sees it (docs/sizing.md, "Sizing a fleet"):

  - P actor processes x W worker threads. A worker owns g games split into G = min(k, g) groups
    (k = requests_in_flight); each group has one inference request of r rows in flight or is
    being searched (actor/actor.h). A worker is a closed loop of G customers over two stations:
    its own CPU (demand D = r * c per cycle, c = actor CPU seconds per leaf evaluation: search,
    encoding, the client) and a delay (the request's latency L). Exact mean-value analysis
    (Reiser and Lavenberg 1980) for one queue and one delay station gives its cycles/s:
        Q(0) = 0;  for n = 1..G:  R(n) = D (1 + Q(n-1)),  X(n) = n / (R(n) + L),  Q(n) = X(n) R(n)
    and rows/s = r X(G).
  - S inference servers, the rows spread evenly (least outstanding rows does that for equal
    servers). A server offered lambda rows/s runs batches back to back whenever rows wait, m at
    once (parallel_passes: 1 on a GPU, whose passes queue; the batcher's workers on CPU cores):
    its batch b is the fixed point of  b = (lambda / m) t(b)  (the rows that arrive while a
    batch computes form the next), where t(b) is a served pass's time at batch b: the raw pass
    (a measured or assumed table, interpolated linearly) times serving_factor (measured: the
    served pass over the raw one) plus batch_overhead_s; b kept in [min(r, B), B_eff]: a
    request is never split (so b >= r), B_eff = min(max_batch, rows in flight per server /
    server workers for the tuned batcher, which caps its choice so) rounded down to whole
    requests (the batcher takes them in order while they fit), and lambda > m B_eff / t(B_eff)
    is saturation. Its duty cycle is rho = lambda t(b) / (m b), and a request waits on average
    for the half of a pass in progress when it arrives while busy:
        L = wire + t(b) (1 + rho / 2) + (1 - rho) w
    where w is what an idle server waits: 0 for the tuned batcher (it dispatches when waiting
    would not lower the cost per row); the fixed batcher waits for B rows or max_delay, so
    w = max_delay when fewer than B rows are ever in flight, else min(max_delay, (B - r) /
    lambda), and its batch is at least the rows that arrive meanwhile, r + lambda max_delay
    (capped by the rows in flight).
    The server's host CPU (gRPC, decoding, batching, copies: `zf bench serving`) costs h seconds
    per row on cores of its own, or on the shared box.
  - Replay: each position costs i seconds to insert and SPI x s to be sampled (samples per
    insert); a shard's cores bound its rate.
  - The learner samples SPI positions per position inserted. Rate-limited (zf run: a small error
    buffer) it trains at steps/s = positions/s x SPI / batch and caps self-play at
    batch / (SPI step_s); free-running (the namespace fleet's huge error buffer) it keeps its
    threads busy whatever the actors do.
  - One box (`box.cores` set: `zf run`, the namespace fleet on this machine): every thread
    shares the cores by processor sharing. Each runnable thread then runs at 1 / sigma of a core;
    sigma >= 1 is the fixed point where the CPU used is the CPU there is:
        X(sigma) cpu_per_row(sigma) + free_threads / sigma = cores      (sigma = 1 if it fits)
    with every CPU demand above (actor, CPU forward pass, host, replay, learner) stretched by
    sigma inside the loops.

The self-play throughput X (rows/s) solves X = actors(L(X)) by bisection, capped by every
station's capacity; the bottleneck is the station whose utilization is highest (above 0.95) or,
when none is, the actors' rows in flight (more games per worker or workers would go faster).

Thread-safety: pure functions over dicts; no state.
"""
import copy
import math

DEFAULTS = {
    "selfplay": {
        "moves_per_game": None,          # moves a game lasts (required)
        "evals_per_move": None,          # leaf evaluations per move (required)
        "positions_per_game": None,      # training positions a game yields (default: its moves)
        "actor_cpu_s_per_eval": None,    # actor CPU per leaf evaluation (required)
    },
    "actors": {
        "processes": 1, "workers": 1, "games_per_worker": 32, "requests_in_flight": 2,
        "leaves_per_game": 4,
        "rows_per_request": None,        # measured mean; default: games per group x leaves
    },
    "inference": {
        "servers": 1,
        "forward": None,                 # [[batch, seconds], ...] ascending (required)
        "serving_factor": 1.0,           # a served pass over a raw one of the same batch
        "batch_overhead_s": 0.0,         # and what serving adds to each pass besides
        "parallel_passes": 1,            # passes that run at once: 1 on a GPU, the batcher's
                                         # workers on CPU cores of their own
        "max_batch": 256,
        "workers": 2,                    # batches in flight per server (the batcher's workers)
        "batching": "tuned",             # tuned (--batch_tuning=auto) or fixed
        "max_delay_s": 0.002,            # fixed batching's max_delay
        "forward_on_cpu": False,         # the pass runs on the shared box's cores (CPU backend)
        "forward_cpu_threads": 1,        # cores a CPU pass keeps busy
        "host_cpu_s_per_eval": 0.0,      # server host CPU per row (zf bench serving)
        "host_cores": None,              # cores of each server's host (None: not a limit)
        "wire_s": 0.0,                   # request transfer, both ways (beyond the host CPU)
    },
    "replay": {
        "shards": 1,
        "insert_cpu_s_per_position": 0.0,
        "sample_cpu_s_per_position": 0.0,
        "cores_per_shard": None,         # None: not a limit (one box: shared)
    },
    "learner": {
        "batch": 256, "samples_per_insert": 4.0,
        "step_s": 0.0,                   # one training step's time on its devices (0: no learner)
        "threads": 1,                    # CPU threads a step keeps busy (0 on a GPU)
        "mode": "rate_limited",          # rate_limited (inserts wait for it) or free
    },
    "box": {
        "cores": None,                   # one box: every component shares these cores
        "background_cores": 0.0,         # busy cores the model does not otherwise cover
        "free_threads": 0.0,             # threads always runnable that it does not cover
                                         # either (an evaluator always playing a match)
    },
}


class ModelError(ValueError):
    """A profile the model cannot use: the message names the field and what was wrong."""


def with_defaults(profile):
    """The profile with every default filled in; raises ModelError for unknown or bad fields."""
    out = copy.deepcopy(DEFAULTS)
    for section, values in profile.items():
        if section in ("name", "notes", "sources", "machine", "measured", "assumed"):
            out[section] = values
            continue
        if section not in DEFAULTS:
            raise ModelError(f"unknown section '{section}' (known: {', '.join(DEFAULTS)})")
        if not isinstance(values, dict):
            raise ModelError(f"section '{section}' must be an object")
        for key, value in values.items():
            if key not in DEFAULTS[section]:
                raise ModelError(f"unknown field '{section}.{key}' (known: "
                                 f"{', '.join(DEFAULTS[section])})")
            out[section][key] = value
    _validate(out)
    return out


def _validate(p):
    def need(section, key, low=0.0, strict=True, integer=False):
        v = p[section][key]
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ModelError(f"'{section}.{key}' must be a number, got {v!r}")
        if not math.isfinite(v) or (v <= low if strict else v < low):
            raise ModelError(f"'{section}.{key}' must be {'>' if strict else '>='} {low}, got {v}")
        if integer and int(v) != v:
            raise ModelError(f"'{section}.{key}' must be a whole number, got {v}")

    need("selfplay", "moves_per_game")
    need("selfplay", "evals_per_move")
    need("selfplay", "actor_cpu_s_per_eval")
    if p["selfplay"]["positions_per_game"] is None:
        p["selfplay"]["positions_per_game"] = p["selfplay"]["moves_per_game"]
    need("selfplay", "positions_per_game")
    for key in ("processes", "workers", "games_per_worker", "requests_in_flight",
                "leaves_per_game"):
        need("actors", key, low=1, strict=False, integer=True)
    if p["actors"]["rows_per_request"] is not None:
        need("actors", "rows_per_request")
    need("inference", "servers", low=1, strict=False, integer=True)
    need("inference", "max_batch", low=1, strict=False, integer=True)
    need("inference", "workers", low=1, strict=False, integer=True)
    for key in ("max_delay_s", "host_cpu_s_per_eval", "wire_s", "batch_overhead_s"):
        need("inference", key, strict=False)
    need("inference", "serving_factor")
    need("inference", "parallel_passes", low=1, strict=False, integer=True)
    need("inference", "forward_cpu_threads", strict=False)
    if p["inference"]["batching"] not in ("tuned", "fixed"):
        raise ModelError(f"'inference.batching' must be tuned or fixed, got "
                         f"{p['inference']['batching']!r}")
    forward = p["inference"]["forward"]
    if not isinstance(forward, list) or not forward:
        raise ModelError("'inference.forward' must be a list of [batch, seconds] pairs")
    last = 0
    for pair in forward:
        if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                or not all(isinstance(x, (int, float)) for x in pair)
                or pair[0] <= last or pair[1] <= 0):
            raise ModelError(f"'inference.forward': each entry is [batch, seconds] with batches "
                             f"increasing and seconds > 0, got {pair!r}")
        last = pair[0]
    need("replay", "shards", low=1, strict=False, integer=True)
    need("replay", "insert_cpu_s_per_position", strict=False)
    need("replay", "sample_cpu_s_per_position", strict=False)
    need("learner", "batch", low=1, strict=False, integer=True)
    need("learner", "samples_per_insert")
    need("learner", "step_s", strict=False)
    need("learner", "threads", strict=False)
    if p["learner"]["mode"] not in ("rate_limited", "free"):
        raise ModelError(f"'learner.mode' must be rate_limited or free, got "
                         f"{p['learner']['mode']!r}")
    for section, key in (("inference", "host_cores"), ("replay", "cores_per_shard"),
                         ("box", "cores")):
        if p[section][key] is not None:
            need(section, key)
    need("box", "background_cores", strict=False)
    need("box", "free_threads", strict=False)
    if p["box"]["cores"] is not None and p["box"]["background_cores"] >= p["box"]["cores"]:
        raise ModelError("'box.background_cores' must be below 'box.cores'")


def forward_time(table, batch):
    """t(b): the forward pass's seconds at `batch` rows, linear between the table's points and
    beyond its ends (a pass costs a fixed launch part plus a part per row)."""
    if len(table) == 1:
        b0, t0 = table[0]
        return t0 * max(batch, 1e-9) / b0 if batch > b0 else t0
    for (b0, t0), (b1, t1) in zip(table, table[1:]):
        if batch <= b1 or (b1, t1) == tuple(table[-1]):
            slope = (t1 - t0) / (b1 - b0)
            return max(t0 + slope * (batch - b0), min(t0, t1) * 1e-3)
    raise AssertionError("unreachable")


def worker_cycles_per_s(groups, demand_s, delay_s):
    """Exact MVA of `groups` customers over one queueing station (demand_s per visit) and one
    delay station (delay_s): the throughput in cycles/s."""
    queue = 0.0
    x = 0.0
    for n in range(1, groups + 1):
        residence = demand_s * (1 + queue)
        x = n / (residence + delay_s)
        queue = x * residence
    return x


def _solve_batch(lam, t, b_min, b_max):
    """The batch b in [b_min, b_max] with b = lam t(b) (bisection), and whether lam saturates."""
    if lam * t(b_min) <= b_min:
        return b_min, False
    if lam * t(b_max) >= b_max:
        return b_max, True
    lo, hi = b_min, b_max
    for _ in range(100):
        mid = (lo + hi) / 2
        if lam * t(mid) > mid:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2, False


def predict(profile):
    """The fleet's steady state. Returns a dict: games/s, positions/s, evaluations/s, the
    latency, each server's batch and duty cycle, every station's utilization, the bottleneck and
    sigma (the shared box's slowdown). Raises ModelError for a bad profile."""
    p = with_defaults(profile)
    sp, ac, inf, rp, ln, box = (p[k] for k in ("selfplay", "actors", "inference", "replay",
                                               "learner", "box"))
    groups = min(ac["requests_in_flight"], ac["games_per_worker"])
    rows = ac["rows_per_request"] or ac["games_per_worker"] / groups * ac["leaves_per_game"]
    worker_threads = ac["processes"] * ac["workers"]
    servers = inf["servers"]
    evals_per_game = sp["evals_per_move"] * sp["moves_per_game"]
    positions_per_row = sp["positions_per_game"] / evals_per_game
    spi = ln["samples_per_insert"]
    shared = box["cores"] is not None
    rows_in_flight_per_server = worker_threads * groups * rows / servers
    b_cap = float(inf["max_batch"])
    if inf["batching"] == "tuned":  # the tuner's cap: the rows outstanding over its workers
        b_cap = min(b_cap, rows_in_flight_per_server / inf["workers"])
    b_cap = max(b_cap, 1.0)
    if rows <= b_cap:
        # The batcher takes whole requests, in order, while they fit (no overtaking, no split
        # below max_batch): a batch holds at most floor(B / r) of them.
        b_cap = math.floor(b_cap / rows) * rows
    b_min = min(rows, b_cap)

    sampled_per_position = 0.0 if ln["mode"] == "free" else spi
    replay_cpu_per_row = positions_per_row * (rp["insert_cpu_s_per_position"]
                                              + sampled_per_position
                                              * rp["sample_cpu_s_per_position"])
    learner_cpu_per_step = ln["step_s"] * ln["threads"]
    rate_limited = ln["mode"] == "rate_limited" and ln["step_s"] > 0
    learner_cpu_per_row = (positions_per_row * spi / ln["batch"] * learner_cpu_per_step
                           if rate_limited else 0.0)
    free_learner = ln["mode"] == "free" and ln["step_s"] > 0
    # A free-running learner keeps its threads busy, and the shards busy sampling for it.
    free_threads = box["free_threads"] + (
        ln["threads"] + ln["batch"] * rp["sample_cpu_s_per_position"] / ln["step_s"]
        if free_learner else 0.0)

    passes = inf["parallel_passes"]

    def served(b):
        """A served pass at batch b: the raw pass plus serving's own part."""
        return forward_time(inf["forward"], b) * inf["serving_factor"] + inf["batch_overhead_s"]

    def state(x, sigma):
        """Everything at self-play rows/s x with the shared box slowed by sigma."""
        fwd_stretch = sigma if (shared and inf["forward_on_cpu"]) else 1.0

        def t(b):
            return served(b) * fwd_stretch

        lam = x / servers / passes  # each of a server's parallel passes takes its share
        low, wait = b_min, 0.0
        if inf["batching"] == "fixed" and x > 0:
            # An idle worker waits for max_batch rows or max_delay: the rows that come meanwhile
            # (at most those in flight) join the first request; short of max_batch it waits it
            # all out.
            arrive = x / servers
            fill = min(b_cap, rows_in_flight_per_server)
            low = min(fill, rows + arrive * inf["max_delay_s"])
            wait = (inf["max_delay_s"] if rows_in_flight_per_server < inf["max_batch"]
                    else min(inf["max_delay_s"], max(0.0, inf["max_batch"] - rows) / arrive))
        batch, saturated = _solve_batch(lam, t, low, b_cap) if lam > 0 else (low, False)
        duty = min(1.0, lam * t(batch) / batch) if lam > 0 else 0.0
        host_stretch = sigma if shared else 1.0
        latency = (inf["wire_s"] + inf["host_cpu_s_per_eval"] * rows * host_stretch
                   + t(batch) * (1 + duty / 2) + (1 - duty) * wait)
        fwd_cpu_per_row = (served(batch) / batch * inf["forward_cpu_threads"]
                           if inf["forward_on_cpu"] else 0.0)
        cpu_per_row = (sp["actor_cpu_s_per_eval"] + inf["host_cpu_s_per_eval"] + fwd_cpu_per_row
                       + replay_cpu_per_row + learner_cpu_per_row)
        return {"batch": batch, "saturated": saturated, "duty": duty, "latency": latency,
                "cpu_per_row": cpu_per_row, "t_batch": t(batch)}

    def actors_rows_per_s(latency, sigma):
        demand = rows * sp["actor_cpu_s_per_eval"] * (sigma if shared else 1.0)
        return worker_threads * rows * worker_cycles_per_s(groups, demand, latency)

    # Station capacities in rows/s (at sigma = 1; the shared box adds its own constraint).
    def capacities(sigma):
        stretch = sigma if shared else 1.0
        fwd_stretch = sigma if (shared and inf["forward_on_cpu"]) else 1.0
        caps = {
            "actor CPU": worker_threads / (sp["actor_cpu_s_per_eval"] * stretch),
            "inference": servers * passes * b_cap / (served(b_cap) * fwd_stretch),
        }
        if inf["host_cores"] is not None and inf["host_cpu_s_per_eval"] > 0:
            caps["inference host CPU"] = servers * inf["host_cores"] / inf["host_cpu_s_per_eval"]
        if rp["cores_per_shard"] is not None and replay_cpu_per_row > 0:
            caps["replay"] = rp["shards"] * rp["cores_per_shard"] / replay_cpu_per_row
        if rate_limited:
            caps["learner"] = ln["batch"] / (spi * ln["step_s"] * stretch) / positions_per_row
        return caps

    def solve(sigma):
        caps = capacities(sigma)
        hi = min(caps.values())
        lo = 0.0
        for _ in range(200):
            mid = (lo + hi) / 2
            if actors_rows_per_s(state(mid, sigma)["latency"], sigma) > mid:
                lo = mid
            else:
                hi = mid
        x = (lo + hi) / 2
        return x, state(x, sigma), caps

    sigma = 1.0
    x, st, caps = solve(1.0)
    if shared:
        cores = box["cores"] - box["background_cores"]

        def excess(s):
            xs, sts, _ = solve(s)
            return xs * sts["cpu_per_row"] + free_threads / s - cores

        if excess(1.0) > 0:
            lo, hi = 1.0, 2.0
            while excess(hi) > 0 and hi < 1e6:
                hi *= 2
            for _ in range(60):
                mid = (lo + hi) / 2
                if excess(mid) > 0:
                    lo = mid
                else:
                    hi = mid
            sigma = hi
            x, st, caps = solve(sigma)

    games = x / evals_per_game
    positions = x * positions_per_row
    utilization = {name: x / cap for name, cap in caps.items()}
    utilization["inference"] = max(st["duty"], x / caps["inference"])
    if shared:
        used = x * st["cpu_per_row"] + free_threads / sigma + box["background_cores"]
        utilization["shared cores"] = used / box["cores"]
    top = max(utilization, key=utilization.get)
    bottleneck = top if utilization[top] >= 0.95 else "actors' rows in flight"
    if shared and sigma > 1.0 + 1e-6:
        bottleneck = "shared cores"
    learner_steps = positions * spi / ln["batch"]
    return {
        "games_per_s": games,
        "positions_per_s": positions,
        "evaluations_per_s": x,
        "rows_per_request": rows,
        "server_batch": st["batch"],
        "server_duty": st["duty"],
        "server_evaluations_per_s": x / servers,
        "latency_s": st["latency"],
        "learner_steps_per_s": (1 / (ln["step_s"] * sigma) if free_learner else learner_steps),
        "learner_duty": (1.0 if free_learner else learner_steps * ln["step_s"] * sigma),
        "sigma": sigma,
        "utilization": utilization,
        "bottleneck": bottleneck,
    }


def scale(profile, **changes):
    """A copy of `profile` with dotted fields changed: scale(p, **{"actors.processes": 4})."""
    out = copy.deepcopy(profile)
    for dotted, value in changes.items():
        section, key = dotted.split(".", 1)
        out.setdefault(section, {})[key] = value
    return out
