"""Faults under load on the multi-host fleet, and what they must not break.

A session starts the fleet (fleetlib.Fleet), waits for steady self-play (games acknowledged by
replay), then injects faults one after another. For each fault it measures the acknowledged
games/s before it, the seconds until the fleet is back at 80% of that rate after the fault ends,
the failed-and-retried replay inserts, the inference server's open streams, and what is fault
specific (the learner's step across its restart, refused inserts on a full disk). At the end it
stops every process as Kubernetes would (SIGTERM, grace period), lists what every replay shard's
log holds (`zf replay ls`) and compares it with the ids the actors were told were stored.

Checked (a session fails on any): every acknowledged game is in replay (but for exactly the games
whose log records damage-replay zeroed on disk, none of which may be listed), no game is stored twice,
the model version served never goes backwards, the learner never restarts behind its last
checkpoint, no process crashes or hangs past its grace period, the fleet recovers to 80% of its
rate within the bound, the inference server's open streams return to one per actor, and a replay
shard's partition makes the actors retry their inserts (it outlasts their deadline).

With two inference servers (PAIR_FAULTS, a fleet with inference_servers=2): one killed (games/s
never below 40% of before while it is dead), one stopped for 15 s (the actors move its requests
within 2 s and the other takes its share), both restarted in turn (self-play never stops).
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import time

import fleetlib
from fleetlib import metric

# The alert each fault must raise in the live Prometheus: (alertname, instance host or None).
EXPECTED_ALERTS = {
    "replay-kill": [("ZfProcessRestarted", "replay-0"), ("ZfTargetMissedScrapes", "replay-0")],
    "inference-kill": [("ZfProcessRestarted", "inference")],
    "learner-kill": [("ZfProcessRestarted", "learner")],
    "partition-actor": [("ZfTargetMissedScrapes", "actor-1")],
    "partition-replay": [("ZfTargetMissedScrapes", "replay-1"), ("ZfActorReplayRetrying", None)],
    "sigstop-inference": [("ZfTargetMissedScrapes", "inference")],
    "disk-full": [("ZfReplayInsertsRefused", "replay-0")],
    "rolling-restart": [("ZfProcessRestarted", "replay-1"), ("ZfProcessRestarted", "actor-2")],
    "damage-replay": [("ZfReplayLogDamaged", "replay-0")],
    "damage-checkpoint": [("ZfProcessRestarted", "learner")],
    # With two inference servers (--inference-servers 2: inference-1 and inference-2).
    "inference-kill-one": [("ZfProcessRestarted", "inference-1")],
    "sigstop-inference-one": [("ZfTargetMissedScrapes", "inference-1")],
    "rolling-restart-inference": [("ZfProcessRestarted", "inference-1"),
                                  ("ZfProcessRestarted", "inference-2")],
}
ALERT_BOUND_S = 30


def alert_key(alertname, host):
    return alertname if host is None else f"{alertname}{{{host}}}"

RECOVERY_FRACTION = 0.8
RECOVERY_BOUND_S = 120
STREAMS_BOUND_S = 90  # keepalive 20 s + timeout 10 s on each side, plus reconnect backoff
# A fault's baseline is measured only once the actors' replay backlog (games held unacknowledged,
# zf_replay_writer_unacknowledged_games) has stayed at most BACKLOG_GAMES_PER_ACTOR per actor for a
# whole baseline window: the flush of an earlier fault's backlog runs above the steady rate (for
# 10 of the 10 s before one rolling update, whose baseline was then 1.5x the rate the fleet came
# back to). Waited for at most BACKLOG_BOUND_S.
BACKLOG_GAMES_PER_ACTOR = 128  # steady self-play held up to 101 for two actors (engine fleet)
BACKLOG_BOUND_S = 60


class Durations:
    """The issue's durations (full) or shortened ones for the suite in `make test` (quick)."""

    def __init__(self, quick):
        self.quick = quick
        self.baseline_s = 10 if quick else 20
        self.replay_down_s = 5 if quick else 20
        self.partition_s = 8 if quick else 30
        # A replay shard's partition must outlast the actors' insert deadline (ShardedReplayWriter
        # rpc_timeout, 10 s): inserts wait for ready, so a shorter one only delays the insert in
        # flight, which then succeeds without a retry and ZfActorReplayRetrying need not fire.
        self.replay_partition_s = 14 if quick else 30
        self.sigstop_s = 5 if quick else 15
        self.disk_full_s = 8 if quick else 20
        self.settle_s = 3 if quick else 10
        # One of two inference servers: down before its restart, and stopped (the 15 s
        # in both: the load must move within 2 s, and stay moved).
        self.inference_down_s = 8 if quick else 20
        self.sigstop_one_s = 15


FAULTS = ["replay-kill", "inference-kill", "learner-kill", "partition-actor", "partition-replay",
          "sigstop-inference", "disk-full", "damage-replay", "damage-checkpoint",
          "rolling-restart"]
# The same scenarios through a Docker engine (enginefleet.py: SIGKILL of a container's main process,
# restarted by its policy; `docker pause`; `docker network disconnect`), and the rolling
# `docker-compose up -d` of a new image tag in place of the rolling restart.
# Faults of one of several inference servers (a fleet with --inference-servers 2 or more), and
# what they must keep: games/s never below KILL_ONE_FLOOR of before while one is dead, the load
# on the others within MOVE_BOUND_S of a SIGSTOP, self-play never stopping in a rolling restart.
PAIR_FAULTS = ["inference-kill-one", "sigstop-inference-one", "rolling-restart-inference"]
KILL_ONE_FLOOR = 0.4
MOVE_BOUND_S = 2.0
TAKEN_OVER = 1.5  # "moved": the others at this many times their own rate before (one of two: 2x)
LOWEST_WINDOW_S = 5.0
ENGINE_FAULTS = ["replay-kill", "inference-kill", "learner-kill", "sigstop-inference",
                 "partition-actor", "partition-replay", "rolling-update"]


def log_frames(data):
    """[(offset, end, game_id or None)] of the records of a ZFRLOG02 replay log segment
    (replay/log.h: sync "ZFRM", u32 length, u32 crc, u32 header crc, payload). Written here from
    the format's description, not from the C++ reader, so the check is independent of it."""
    import zlib
    if data[:8] != b"ZFRLOG02":
        raise ValueError(f"not a ZFRLOG02 segment: {data[:8]!r}")
    frames, pos = [], 8
    while pos + 16 <= len(data):
        length = int.from_bytes(data[pos + 4:pos + 8], "little")
        if (data[pos:pos + 4] != b"ZFRM" or
                zlib.crc32(data[pos:pos + 12]) != int.from_bytes(data[pos + 12:pos + 16], "little")):
            raise ValueError(f"bad record header at offset {pos}")
        payload = data[pos + 16:pos + 16 + length]
        game_id = None
        if payload[:1] == b"\x0a" and payload[1] < 0x80:  # field 1 (game_id), a short length
            game_id = payload[2:2 + payload[1]].decode()
        frames.append((pos, pos + 16 + length, game_id))
        pos += 16 + length
    return frames


class Session:
    """The faults, their measurements and the end's checks, over a fleet: namespaced processes
    (fleetlib.Fleet, made here from the other arguments) or the containers of a Docker engine
    (`fleet`: an enginefleet.EngineFleet, whose restart policy brings killed processes back)."""

    def __init__(self, run_dir, zf, quick, actors=2, previous_zf=None, interval=1.0, log=print,
                 env=None, tmpfs_bytes=64 << 20, tls=False, fleet=None, inference_servers=1):
        self.fleet = fleet or fleetlib.Fleet(run_dir, zf, actors=actors, env=env, tls=tls,
                                             inference_servers=inference_servers)
        self.tmpfs_bytes = tmpfs_bytes
        self.d = Durations(quick)
        # The previous release has no TLS: it cannot join a mutual-TLS fleet.
        self.previous_zf = None if tls else previous_zf
        self.interval = interval
        # With several inference servers the faults compare rates, so the first baseline must
        # not be the fleet's warm-up (its games/s roughly doubles over its first 20 s here).
        self.warmup_s = 20 if inference_servers > 1 else 0
        if inference_servers > 1:
            # And a longer settling after each fault: a restarted server's first seconds came with
            # a burst of games (1.5x for 10 s, once) that made the next fault's "before".
            self.d.settle_s = max(self.d.settle_s, 10)
        self.log = log
        self.monitor = None
        self.faults = []
        self.failures = []
        self.learner_restarts = []
        self.damaged_games = set()  # game ids whose log records damage-replay zeroed
        self.prometheus = None
        self.previous_release = None

    # ---- helpers ----
    def expect(self, ok, message):
        if not ok:
            self.failures.append(message)
            self.log(f"  FAIL: {message}")

    def actors(self):
        return self.fleet.by_role("actor")

    def counter_total(self, role, name, **labels):
        """Sum over hosts of `role` of a counter's increase over the session (restarts reset a
        process's counters; the increase across them is summed)."""
        return self.counter_total_until(role, name, float("inf"), **labels)

    def counter_total_until(self, role, name, t_to, **labels):
        """counter_total over the samples up to monitor time `t_to`."""
        return sum(self.monitor.counter_increase(h.name, name, float("-inf"), t_to,
                                                 from_zero=True, **labels)
                   for h in self.fleet.by_role(role))

    def open_streams(self):
        """The inference servers' open Evaluate streams now, summed (None if a live one does not
        answer)."""
        total = 0
        for inf in self.fleet.by_role("inference"):
            if not inf.alive():
                continue
            streams = metric(inf.scrape() or {}, "zf_inference_open_streams")
            if streams is None:
                return None
            total += streams
        return total

    def wanted_streams(self):
        """One stream from every live actor to every live inference server."""
        return (sum(1 for a in self.actors() if a.alive()) *
                sum(1 for i in self.fleet.by_role("inference") if i.alive()))

    def evaluations_rate(self, hosts, t_from, t_to):
        """Evaluations/s of these inference hosts together between two monitor times."""
        rates = [self.monitor.counter_rate(h.name, "zf_inference_evaluations_total", t_from, t_to)
                 for h in hosts]
        return sum(r for r in rates if r is not None)

    def wait(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            crashed = self.fleet.check_crashes()
            for name in crashed:
                h = self.fleet.hosts[name]
                self.expect(False, f"{name} exited on its own with code {h.crashes[-1]}:\n"
                                   f"{h.log_text()[-2000:]}")
            time.sleep(min(0.5, max(0.0, end - time.monotonic())))

    def learner_step_log(self, learner):
        """(last published step, step each start resumed from) from the learner's logs."""
        text = learner.log_text()
        published = [int(s) for s in re.findall(r"published version \d+ at step (\d+)", text)]
        starts = [int(s) for s in re.findall(r"zf learner: \S+ step (\d+)", text)]
        return (published[-1] if published else 0), starts

    # ---- lifecycle ----
    def start(self, tmpfs_replay=None):
        self.fleet.create_network()
        if tmpfs_replay is not None:
            host = self.fleet.hosts[tmpfs_replay]
            self.fleet.mount_tmpfs(host.volume_dirs()[0], self.tmpfs_bytes)
        for h in self.fleet.hosts.values():
            self.fleet.start(h)
            self.log(f"  {h.name:10s} {str(h.address):14s} up ({h.role})")
        self.monitor = fleetlib.Monitor(self.fleet, interval=self.interval)
        self.monitor.start()
        self.prometheus, why_not = self.fleet.alert_source()
        if self.prometheus is not None:
            self.prometheus.start()
        else:
            self.log(f"  ({why_not})")
        # Steady load: games acknowledged for a few seconds in a row.
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            self.wait(2)
            t = self.monitor.now()
            if self.monitor.acked_rate(t - 5, t) > 0 and self.monitor.acked_rate(t - 2, t) > 0:
                break
        else:
            raise RuntimeError("no games acknowledged within 180 s of start-up")
        self.wait(self.d.baseline_s + self.warmup_s)

    def backlog(self, sample):
        """The games the actors held unacknowledged in one monitor sample (summed over the actors
        whose scrape answered; a release without the gauge counts 0)."""
        hosts = sample["hosts"]
        return sum(metric(hosts.get(a.name, {}).get("metrics") or {},
                          "zf_replay_writer_unacknowledged_games") or 0
                   for a in self.actors())

    def wait_backlog_drained(self):
        """Waits until the actors' replay backlog has been at most BACKLOG_GAMES_PER_ACTOR per
        actor for the last baseline window, or BACKLOG_BOUND_S has passed. Returns (seconds
        waited, the largest backlog in the window measured)."""
        m = self.monitor
        start = m.now()
        limit = BACKLOG_GAMES_PER_ACTOR * len(self.actors())
        while True:
            t = m.now()
            window = [(ts, self.backlog(s))
                      for ts, s in m.samples_between(t - self.d.baseline_s, t)]
            high = [ts for ts, games in window if games > limit]
            if not high or t - start >= BACKLOG_BOUND_S:
                return t - start, max((games for _, games in window), default=None)
            self.wait(min(high[-1] + self.d.baseline_s - t, BACKLOG_BOUND_S - (t - start)) + 0.5)

    def measure_fault(self, name, inject, details=None):
        """Runs `inject()` (returns when the fault is over) and measures the recovery."""
        m = self.monitor
        backlog_wait_s, backlog_max = self.wait_backlog_drained()
        t0 = m.now()
        # The median second, not the mean: the window may hold the burst of a backlog that an
        # earlier fault's recovery flushed (one quick run's had a 2,047 games/s second, and a
        # mean 70% above the fleet's steady rate that nothing could then get back to).
        baseline = m.median_acked_rate(t0 - self.d.baseline_s, t0)
        retries0 = self.counter_total("actor", "zf_replay_writer_insert_retries_total")
        streams0 = self.open_streams()
        moved0 = self.counter_total("actor", "zf_inference_client_requests_moved_total")
        self.log(f"- {name}: baseline {baseline:.1f} acknowledged games/s")
        extra = inject() or {}
        t1 = m.now()
        # Back at 80% of the rate, the inference server's streams back to one per live actor
        # (dead ones noticed by keepalive and freed), and the fault's alerts raised: each timed
        # from the fault's end.
        want = self.wanted_streams()
        want_alerts = EXPECTED_ALERTS.get(name, []) if self.prometheus is not None else []
        alerts = {}
        recovered_at = streams_at = None
        streams_max = 0
        while m.now() - t1 < max(RECOVERY_BOUND_S, STREAMS_BOUND_S):
            t = m.now()
            if (recovered_at is None and t - t1 >= 3 and
                    m.acked_rate(t - 5, t) >= RECOVERY_FRACTION * baseline):
                recovered_at = t
            streams = self.open_streams()
            if streams is not None:
                streams_max = max(streams_max, streams)
            if streams_at is None and streams == want:
                streams_at = t
            if len(alerts) < len(want_alerts) and t - t1 <= ALERT_BOUND_S:
                alerts.update(self.poll_alerts(want_alerts))
            if (recovered_at is not None and streams_at is not None and
                    (len(alerts) == len(want_alerts) or t - t1 > ALERT_BOUND_S)):
                break
            self.wait(1)
        for key in (alert_key(*w) for w in want_alerts):
            self.expect(key in alerts, f"{name}: alert {key} did not fire within {ALERT_BOUND_S} s")
        self.wait(self.d.settle_s)
        report = {
            "fault": name,
            "fault_start_s": round(t0, 1),
            "fault_seconds": round(t1 - t0, 1),
            "baseline_games_per_s": round(baseline, 2),
            "backlog_wait_s_before": round(backlog_wait_s, 1),
            "backlog_max_games_in_baseline": backlog_max,
            "recovery_s_after_fault": None if recovered_at is None else round(recovered_at - t1, 1),
            "rate_after_games_per_s": round(m.acked_rate(m.now() - 5, m.now()), 2),
            "insert_retries": int(self.counter_total(
                "actor", "zf_replay_writer_insert_retries_total") - retries0),
            "inference_open_streams_before": streams0,
            "inference_open_streams_max_after_fault": streams_max,
            "inference_open_streams_after": self.open_streams(),
            "streams_back_s_after_fault": None if streams_at is None else round(streams_at - t1, 1),
            "alerts": alerts if self.prometheus is not None else None,
        }
        lowest = m.lowest_acked_rate(t0, t1, LOWEST_WINDOW_S)
        report["lowest_games_per_s_during_fault"] = None if lowest is None else round(lowest, 2)
        report["lowest_fraction_of_baseline"] = (None if lowest is None or baseline <= 0 else
                                                 round(lowest / baseline, 3))
        report["inference_requests_moved"] = int(self.counter_total(
            "actor", "zf_inference_client_requests_moved_total") - moved0)
        report["acked_per_s_timeline"] = self.timeline(t0 - 3, m.now())
        report.update(extra)
        self.expect(recovered_at is not None,
                    f"{name}: not back at {RECOVERY_FRACTION:.0%} of {baseline:.1f} games/s within "
                    f"{RECOVERY_BOUND_S} s")
        self.expect(streams_at is not None,
                    f"{name}: inference open streams {self.open_streams()} != {want} after "
                    f"{STREAMS_BOUND_S} s")
        self.log("  " + json.dumps(report))
        self.faults.append(report)
        return report

    def timeline(self, t_from, t_to):
        """Acknowledged games in each whole second from `t_from` (monitor time) to `t_to`."""
        with self.monitor.lock:
            pts = [(t, s["acked"]) for t, s in self.monitor.samples if t_from - 1 <= t <= t_to]
        out = []
        t = t_from
        while t + 1 <= t_to and pts:
            before = [a for tt, a in pts if tt <= t]
            after = [a for tt, a in pts if tt <= t + 1]
            out.append((after[-1] if after else 0) - (before[-1] if before else 0))
            t += 1
        return out

    def poll_alerts(self, want):
        """{alert_key: state} of the wanted alerts that are pending or firing now."""
        seen = {}
        for alertname, labels, state in self.prometheus.alerts():
            for w_name, w_host in want:
                if alertname == w_name and (w_host is None or
                                            labels.get("instance", "").startswith(w_host + ":")):
                    seen[alert_key(w_name, w_host)] = state
        return seen

    # ---- faults ----
    def outage(self, name, host, key, seconds, begin, end):
        """A fault that starts with `begin()` and ends with `end()` `seconds` later."""
        def inject():
            begin()
            self.wait(seconds)
            end()
            return {"host": host.name, key: seconds}
        return self.measure_fault(name, inject)

    def fault(self, name):
        f = self.fleet
        d = self.d
        if name == "replay-kill":
            shard = f.hosts["replay-0"]
            if f.restarts_by_policy:  # down as long as the restart policy leaves it
                def inject():
                    t = time.monotonic()
                    shard.kill9()
                    f.start(shard)
                    return {"host": shard.name, "restarted_by": "restart policy",
                            "down_until_healthy_s": round(time.monotonic() - t, 1)}
                return self.measure_fault(name, inject)
            return self.outage(name, shard, "down_s", d.replay_down_s, shard.kill9,
                               lambda: f.start(shard))
        if name == "inference-kill":
            inf = f.by_role("inference")[0]

            def inject():
                inf.kill9()
                f.start(inf)
                return {"host": inf.name}
            return self.measure_fault(name, inject)
        if name == "learner-kill":
            learner = f.by_role("learner")[0]

            def inject():
                _, starts = self.learner_step_log(learner)
                scraped = learner.scrape() or {}
                steps_before = metric(scraped, "zf_learner_steps_total") or 0
                learner.kill9()
                last_ckpt, _ = self.learner_step_log(learner)
                step_before = (starts[-1] if starts else 0) + int(steps_before)
                f.start(learner)
                _, starts = self.learner_step_log(learner)
                resumed = starts[-1] if starts else None
                self.expect(resumed is not None and resumed >= last_ckpt,
                            f"learner resumed at step {resumed}, behind its last checkpoint "
                            f"(step {last_ckpt})")
                info = {"host": learner.name, "learner_step_before_kill": step_before,
                        "learner_last_checkpoint_step": last_ckpt,
                        "learner_step_after_restart": resumed,
                        "learner_steps_lost": None if resumed is None else step_before - resumed}
                self.learner_restarts.append(info)
                return info
            return self.measure_fault(name, inject)
        if name in ("partition-actor", "partition-replay"):
            host = self.actors()[0] if name == "partition-actor" else f.hosts["replay-1"]
            seconds = d.partition_s if name == "partition-actor" else d.replay_partition_s
            report = self.outage(name, host, "partition_s", seconds, lambda: host.link(False),
                                 lambda: host.link(True))
            # Checked here too, not only through the alert: an earlier fault's retries keep
            # ZfActorReplayRetrying firing for 5 minutes.
            if name == "partition-replay":
                self.expect(report["insert_retries"] > 0,
                            "partition-replay: no actor's insert failed and was retried in a "
                            "partition longer than the insert deadline")
            return report
        if name == "sigstop-inference":
            inf = f.by_role("inference")[0]
            return self.outage(name, inf, "stopped_s", d.sigstop_s,
                               lambda: inf.signal(signal.SIGSTOP), lambda: inf.signal(signal.SIGCONT))
        if name == "disk-full":
            shard = f.hosts["replay-0"]

            def inject():
                volume = shard.volume_dirs()[0]
                errors0 = self.monitor.latest(shard.name, "zf_replay_log_write_errors_total",
                                              reason="disk_full") or 0
                filler = volume / "filler"
                subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64K"],
                               capture_output=True, timeout=60)  # until ENOSPC
                # (A record that fits in a page the segment already has is still stored.)
                stored0 = metric(shard.scrape() or {}, "zf_replay_inserts_total") or 0
                self.wait(d.disk_full_s)
                errors = (self.monitor.latest(shard.name, "zf_replay_log_write_errors_total",
                                              reason="disk_full") or 0) - errors0
                stored_full = (self.monitor.latest(shard.name, "zf_replay_inserts_total") or 0)
                filler.unlink()
                self.expect(errors > 0, "disk-full: the shard never refused an insert")
                return {"host": shard.name, "full_s": d.disk_full_s,
                        "refused_group_commits": int(errors),
                        "stored_while_full": int(stored_full - stored0)}
            return self.measure_fault(name, inject)
        if name == "sabotage-lose-acked":
            # The harness's self-test, not a fault the fleet must survive: kill -9 a shard and
            # delete its log, so acknowledged games are lost and the session must fail.
            shard = f.hosts["replay-1"]

            def inject():
                shard.kill9()
                for segment in shard.volume_dirs()[0].rglob("segment-*.zlog"):
                    segment.unlink()
                f.start(shard)
                return {"host": shard.name}
            return self.measure_fault(name, inject)
        if name == "damage-replay":
            # 16 zeroed bytes (a bad sector's worth of a page) across the boundary of two records
            # in a closed segment of a shard that crashed: those two games are lost, no other.
            shard = f.hosts["replay-0"]

            def inject():
                volume = shard.volume_dirs()[0]
                shard.kill9()  # a crash: the segment being written is closed by the restart
                f.start(shard)
                self.wait(3)
                shard.kill9()
                segments = sorted(volume.rglob("segment-*.zlog"))
                closed = [p for p in segments[:-1] if len(log_frames(p.read_bytes())) >= 4]
                self.expect(closed, f"damage-replay: no closed segment with 4 records in {volume}")
                if not closed:
                    f.start(shard)
                    return {"host": shard.name}
                path = closed[0]
                frames = log_frames(path.read_bytes())
                k = len(frames) // 2
                at = frames[k][1] - 8  # the last 8 bytes of record k, the first 8 of k + 1
                with open(path, "r+b") as fh:
                    fh.seek(at)
                    fh.write(b"\0" * 16)
                touched = [g for (a, b, g) in frames if a < at + 16 and at < b]
                want_quarantined = frames[k + 1][1] - frames[k][0] if k + 1 < len(frames) else 0
                self.damaged_games.update(touched)
                f.start(shard)
                out = subprocess.run([self.fleet.zf, "replay", "verify",
                                      f"--dir={path.parent}", "--json"],
                                     capture_output=True, text=True, timeout=120)
                verify = json.loads(out.stdout) if out.stdout.strip() else {}
                got = verify.get("quarantined_corrupt_bytes")
                self.expect(out.returncode == 1 and got == want_quarantined,
                            f"damage-replay: zf replay verify exited {out.returncode} with {got} "
                            f"bytes quarantined (want 1 and the two records' {want_quarantined}): "
                            f"{out.stderr.strip()[-300:]}")
                return {"host": shard.name, "segment": path.name, "offset": at,
                        "zeroed_bytes": 16, "records_touched": len(touched),
                        "games_touched": touched,
                        "quarantined_corrupt_bytes": verify.get("quarantined_corrupt_bytes")}
            return self.measure_fault(name, inject)
        if name == "damage-checkpoint":
            # The learner crashes and its newest checkpoint is then damaged at rest: it resumes
            # from the newest intact one, sets the damaged file aside, and never serves it.
            learner = f.by_role("learner")[0]

            def inject():
                learner.kill9()
                ckpt_dir = next(p for p in learner.volume_dirs()[0].rglob("checkpoints")
                                if p.is_dir() and p.name == "checkpoints")
                files = sorted(ckpt_dir.glob("ckpt-*.zfckpt"))
                newest = files[-1]
                size = newest.stat().st_size
                with open(newest, "r+b") as fh:
                    fh.seek(size - 100)
                    fh.write(b"\xde\xad\xbe\xef")
                f.start(learner)
                self.wait(3)
                text = learner.log_text()
                aside = ckpt_dir / "damaged" / newest.name
                self.expect(aside.exists() and not newest.exists(),
                            f"damage-checkpoint: {newest.name} was not set aside")
                resumed = re.findall(r"resumed from \S+ckpt-0*(\d+)\.zfckpt", text)
                self.expect(resumed and int(resumed[-1]) < int(newest.stem.split("-")[1]),
                            f"damage-checkpoint: the learner did not resume from an older "
                            f"checkpoint than {newest.name}")
                return {"host": learner.name, "damaged": newest.name,
                        "resumed_from_version": int(resumed[-1]) if resumed else None,
                        "set_aside": aside.exists()}
            return self.measure_fault(name, inject)
        if name == "rolling-restart":
            def inject():
                stops = []
                for h in list(f.hosts.values()):
                    seconds, code, hung = h.stop()
                    stops.append({"host": h.name, "stop_s": round(seconds, 1), "exit_code": code,
                                  "hung": hung})
                    self.expect(not hung, f"rolling restart: {h.name} still running after its "
                                          f"{h.grace_s:.0f} s grace period")
                    self.expect(code == 0, f"rolling restart: {h.name} exited {code} on SIGTERM")
                    f.start(h)
                info = {"stops": stops}
                if self.previous_zf:
                    info["previous_release_actor"] = self.previous_actor()
                return info
            return self.measure_fault(name, inject)
        if name == "rolling-update":
            # The engine's rolling update: `docker-compose up -d` of a new image tag under load.
            def inject():
                before = {h.name: h.state()["Config"]["Image"] for h in f.hosts.values()}
                info = f.rolling_update()
                unchanged = sorted(n for n, image in info["images"].items() if image == before[n])
                self.expect(not unchanged, f"rolling update: not recreated on the new tag: "
                                           f"{unchanged}")
                return info
            return self.measure_fault(name, inject)
        if name in PAIR_FAULTS:
            return self.pair_fault(name)
        raise ValueError(f"unknown fault {name!r}; known: {', '.join(FAULTS)}, with two "
                         f"inference servers {', '.join(PAIR_FAULTS)}, and on an engine "
                         f"{', '.join(ENGINE_FAULTS)}")

    def pair_fault(self, name):
        """A fault of one of several inference servers (PAIR_FAULTS)."""
        f, d, m = self.fleet, self.d, self.monitor
        servers = f.by_role("inference")
        if len(servers) < 2:
            raise ValueError(f"{name} needs two inference servers or more "
                             f"(--inference-servers 2); the fleet has {len(servers)}")
        victim, others = servers[0], servers[1:]
        if name == "inference-kill-one":
            def inject():
                victim.kill9()
                self.wait(d.inference_down_s)
                f.start(victim)
                return {"host": victim.name, "down_s": d.inference_down_s}
            report = self.measure_fault(name, inject)
            lowest = report["lowest_fraction_of_baseline"]
            self.expect(lowest is not None and lowest >= KILL_ONE_FLOOR,
                        f"{name}: games/s fell to {lowest} of before over {LOWEST_WINDOW_S:.0f} s "
                        f"with one of {len(servers)} servers dead (floor {KILL_ONE_FLOOR})")
            return report
        if name == "sigstop-inference-one":
            def inject():
                t = m.now()
                before = self.evaluations_rate(servers, t - self.d.baseline_s, t)
                moved0 = self.counter_total_until("actor",
                                                  "zf_inference_client_requests_moved_total", t)
                victim.signal(signal.SIGSTOP)
                stopped = m.now()
                self.wait(d.sigstop_one_s)
                end = m.now()
                victim.signal(signal.SIGCONT)
                # When the actors moved the requests the stopped server held (their
                # zf_inference_client_requests_moved_total), and the others' evaluations/s in
                # the two seconds after the bound (one second's rate varies by half on this VM).
                moved_at = None
                for ts, _ in self.monitor.samples_between(stopped, end):
                    if self.counter_total_until("actor", "zf_inference_client_requests_moved_total",
                                                ts) > moved0:
                        moved_at = ts - stopped
                        break
                at_bound = self.evaluations_rate(others, stopped + MOVE_BOUND_S,
                                                 stopped + MOVE_BOUND_S + 2.0)
                after_bound = self.evaluations_rate(others, stopped + MOVE_BOUND_S, end)
                timeline = {h.name: [round(self.evaluations_rate([h], a, a + 1.0))
                                     for a in range(int(stopped) - 3, int(end))]
                            for h in servers}
                self.expect(moved_at is not None and moved_at <= MOVE_BOUND_S,
                            f"{name}: the actors moved the stopped server's requests "
                            f"{'never' if moved_at is None else f'{moved_at:.1f} s'} after the "
                            f"SIGSTOP (bound {MOVE_BOUND_S:.0f} s)")
                # Moved by the bound: in the two seconds after it the others evaluate at least
                # TAKEN_OVER times what they did before (they took the stopped server's share).
                # Not "all of before": one server alone may be short of the fleet's rate (31-33
                # thousand evaluations/s against 41 thousand for two, once), and the freed CPU
                # raises the rate for seconds more (22.6 thousand at 2-4 s, 29.5 after, once).
                others_before = self.evaluations_rate(others, t - self.d.baseline_s, t)
                self.expect(at_bound >= TAKEN_OVER * others_before > 0,
                            f"{name}: {MOVE_BOUND_S:.0f}-{MOVE_BOUND_S + 2:.0f} s after the "
                            f"SIGSTOP the other servers evaluated {at_bound:.0f}/s, not "
                            f"{TAKEN_OVER}x their {others_before:.0f}/s before")
                return {"host": victim.name, "stopped_s": d.sigstop_one_s,
                        "evaluations_per_s_before": round(before, 1),
                        "others_evaluations_per_s_at_bound": round(at_bound, 1),
                        "others_evaluations_per_s_bound_to_end": round(after_bound, 1),
                        "others_evaluations_per_s_before": round(others_before, 1),
                        "requests_moved_at_s": None if moved_at is None else round(moved_at, 2),
                        "evaluations_per_s_timeline": timeline}
            return self.measure_fault(name, inject)
        if name == "rolling-restart-inference":
            def inject():
                stops = []
                for h in servers:
                    seconds, code, hung = h.stop()
                    stops.append({"host": h.name, "stop_s": round(seconds, 1), "exit_code": code,
                                  "hung": hung})
                    self.expect(not hung and code == 0,
                                f"{name}: {h.name} exited {code} (hung: {hung}) on SIGTERM")
                    f.start(h)
                return {"stops": stops}
            report = self.measure_fault(name, inject)
            # Never stopped: acknowledged games in every 2 s of it (a restart takes a few).
            t0 = report["fault_start_s"]
            lowest = m.lowest_acked_rate(t0, t0 + report["fault_seconds"], 2.0)
            report["lowest_games_per_s_2s_during_fault"] = (None if lowest is None else
                                                            round(lowest, 2))
            self.expect(lowest is not None and lowest > 0,
                        f"{name}: self-play stopped: {lowest} games/s over some 2 s while the "
                        f"servers restarted one at a time")
            return report
        raise ValueError(f"unknown fault {name!r}")

    def previous_actor(self):
        """An actor of the previous release replaces actor-2 for a while, then the new one comes
        back. The old binary has no --acked_log: it flushes what it played before it exits 0 and
        prints how many games it played, and its game ids carry its actor id, so the finish
        checks that replay holds exactly that many games of that actor."""
        actor = self.actors()[-1]
        actor.stop()
        self.fleet.start(actor, zf=self.previous_zf, acked_log=False)
        self.wait(max(15, self.d.baseline_s))
        seconds, code, hung = actor.stop()
        out = (actor.dir / f"{actor.role}.{actor.starts}.stdout").read_text(errors="replace")
        m = re.search(r"zf actor (\S+): (\d+) games", out)
        self.expect(code == 0 and not hung and m is not None,
                    f"the previous release's actor exited {code}: {out[-500:]}")
        self.fleet.start(actor)
        if m:
            self.previous_release = {"binary": self.previous_zf, "actor_id": m.group(1),
                                     "games_played": int(m.group(2)), "exit_code": code,
                                     "stop_s": round(seconds, 1)}
        return self.previous_release

    # ---- a whole session ----
    def run_faults(self, faults, tmpfs_replay=None):
        """Starts the fleet, injects `faults` in order and finishes (the acknowledged-vs-found
        checks). Returns the report's part: finish()'s figures, "fault_reports", "failures". An
        exception is reported as a failure; tearing the fleet down is the caller's."""
        report = {}
        try:
            self.start(tmpfs_replay=tmpfs_replay)
            for name in faults:
                self.fault(name)
            report.update(self.finish())
        except Exception as e:  # the report says what broke; teardown still runs
            self.failures.append(f"harness: {type(e).__name__}: {e}")
        finally:
            self.close()
        report["fault_reports"] = self.faults
        report["failures"] = self.failures
        return report

    # ---- end ----
    def close(self):
        """Stops the monitor and Prometheus (idempotent); the fleet's with-block removes hosts."""
        if self.monitor is not None and self.monitor.is_alive():
            self.monitor.stop()
        if self.prometheus is not None:
            self.prometheus.stop()

    def finish(self):
        """Stops everything (actors first, so they flush), then compares acks with replay."""
        stops = []
        order = self.actors() + [h for h in self.fleet.hosts.values() if h.role != "actor"]
        for h in order:
            seconds, code, hung = h.stop()
            stops.append({"host": h.name, "stop_s": round(seconds, 1), "exit_code": code,
                          "hung": hung})
            self.expect(not hung, f"{h.name} still running {h.grace_s:.0f} s after SIGTERM")
            self.expect(code == 0, f"{h.name} exited {code} after SIGTERM")
        self.close()
        stored = {}
        shards = {}
        for h in self.fleet.by_role("replay"):
            data_dir = h.host_path(next(a.split("=", 1)[1] for a in h.spec["command"]
                                        if a.startswith("--dir=")))
            out = subprocess.run([self.fleet.zf, "replay", "ls", f"--dir={data_dir}", "--json"],
                                 capture_output=True, text=True, timeout=120)
            if out.returncode != 0:
                self.expect(False, f"zf replay ls {data_dir}: {out.stderr.strip()}")
                continue
            listing = json.loads(out.stdout)
            shards[h.name] = {k: listing[k] for k in ("segments", "records", "games",
                                                      "unreadable", "torn_bytes", "corrupt_bytes")}
            shards[h.name]["duplicated_ids"] = len(listing["duplicated_ids"])
            for gid in listing["game_ids"]:
                stored[gid] = stored.get(gid, 0) + 1
            for gid in listing["duplicated_ids"]:
                stored[gid] = stored.get(gid, 0) + 1
        if self.previous_release is not None:
            prefix = self.previous_release["actor_id"] + "/"
            found = sum(1 for g in stored if g.startswith(prefix))
            self.previous_release["games_in_replay"] = found
            self.expect(found == self.previous_release["games_played"] and found > 0,
                        f"previous release's actor played {self.previous_release['games_played']}"
                        f" games, replay holds {found}")
        acked = set(self.monitor.acked_ids)
        # Games whose records damage-replay hit are lost to it, exactly those: not one more.
        lost_to_damage = sorted(acked & self.damaged_games)
        missing = sorted(acked - set(stored) - self.damaged_games)
        self.expect(not (set(stored) & self.damaged_games),
                    f"games whose records were damaged are still listed: "
                    f"{sorted(set(stored) & self.damaged_games)[:3]}")
        duplicates = sorted(g for g, n in stored.items() if n > 1)
        not_acked = len(set(stored) - acked)
        self.expect(not missing, f"{len(missing)} acknowledged games are not in replay, e.g. "
                                 f"{missing[:3]}")
        self.expect(not duplicates, f"{len(duplicates)} games stored more than once, e.g. "
                                    f"{duplicates[:3]}")
        versions = self.versions_check()
        processes = {}
        for h in self.fleet.hosts.values():
            processes[h.name] = {"role": h.role, "starts": h.starts,
                                 "peak_rss_mib": round(h.peak_rss_bytes / 2**20, 1),
                                 "crashes": h.crashes}
        return {
            "games_acknowledged": len(acked),
            "games_stored": len(stored),
            "acknowledged_missing_from_replay": len(missing),
            "acknowledged_lost_to_damage": len(lost_to_damage),
            "stored_more_than_once": len(duplicates),
            "stored_not_acknowledged": not_acked,
            "shards": shards,
            "versions": versions,
            "replay_insert_retries": int(self.counter_total(
                "actor", "zf_replay_writer_insert_retries_total")),
            "learner_restarts": self.learner_restarts,
            "previous_release_actor": self.previous_release,
            "processes": processes,
            "final_stops": stops,
            "seconds": round(self.monitor.now(), 1),
        }

    def versions_check(self):
        """Model versions seen in inference's and the actors' metrics never go backwards."""
        out = {}
        for h in self.fleet.hosts.values():
            name = {"inference": "zf_inference_model_version",
                    "actor": "zf_actor_model_version"}.get(h.role)
            if name is None:
                continue
            series = [v for _, v in self.monitor.series(h.name, name) if v > 0]
            backwards = sum(1 for a, b in zip(series, series[1:]) if b < a)
            out[h.name] = {"first": int(series[0]) if series else None,
                           "last": int(series[-1]) if series else None,
                           "went_backwards": backwards}
            self.expect(backwards == 0, f"{h.name}: the model version went backwards "
                                        f"{backwards} times")
        return out


def fresh_dir(run_dir):
    """Empties the session's directory: volumes and acknowledgement logs left by an earlier run in
    the same place would otherwise be read as this run's (a shard's old games, an actor's old
    acknowledgements; a replay volume that was a tmpfs starts empty and "loses" them)."""
    shutil.rmtree(run_dir, ignore_errors=True)
    if os.path.exists(run_dir):
        raise RuntimeError(f"cannot empty {run_dir} (a mount left by a killed run? "
                           "`tests/multihost/fleet down` removes it)")


def run_session(run_dir, zf, faults, quick, actors=2, previous_zf=None, log=print, tls=False,
                inference_servers=1):
    """One fleet, `faults` in order, in an emptied `run_dir`. Returns the report (dict) with
    "passed"."""
    fresh_dir(run_dir)
    # Samples every half second with several servers: a load that moves within 2 s is timed.
    # With several servers the batchers keep fixed settings: the self-tuning, restarted under
    # load on 2 cores, chose max_batch 2-16 and halved games/s for minutes (seen once), which
    # is not what these faults measure.
    session = Session(run_dir, zf, quick, actors=actors, previous_zf=previous_zf, log=log, tls=tls,
                      inference_servers=inference_servers,
                      env={"ZF_BATCH_TUNING": "off"} if inference_servers > 1 else None,
                      interval=0.5 if inference_servers > 1 else 1.0)
    report = {"faults": faults, "quick": quick, "actors": actors, "tls": tls,
              "inference_servers": inference_servers,
              "settings": session.fleet.env, "machine": machine()}
    with session.fleet:
        report.update(session.run_faults(
            faults, tmpfs_replay="replay-0" if "disk-full" in faults else None))
    report["passed"] = not session.failures
    return report


def run_soak(run_dir, zf, minutes, every_s, seed, log=print):
    """The fleet for `minutes` with a random fault every `every_s` s; RSS, threads and open files
    of every process sampled every 10 s. Returns the report with each resource's slope."""
    rng = random.Random(seed)
    # Slower self-play (64 simulations) and a window that holds the whole run, so that every
    # acknowledged game is still in replay at the end: the loss check stays exact. The replay
    # shards' memory therefore grows with the window by design; the report gives its slope.
    fresh_dir(run_dir)
    session = Session(run_dir, zf, quick=False, log=log,
                      env={"ZF_SIMS": "64", "ZF_REPLAY_CAPACITY": "20000000"},
                      tmpfs_bytes=2 << 30)
    choices = [f for f in FAULTS if f != "rolling-restart"] + ["rolling-restart"]
    report = {"minutes": minutes, "every_s": every_s, "seed": seed, "machine": machine()}
    with session.fleet:
        try:
            session.start(tmpfs_replay="replay-0")
            end = time.monotonic() + minutes * 60
            while time.monotonic() + every_s < end:
                session.wait(every_s * rng.uniform(0.5, 1.0))
                session.fault(rng.choice(choices))
            session.wait(max(0, end - time.monotonic()))
            report["resources"] = resource_slopes(session.monitor, session.fleet)
            report["resource_samples"] = resource_samples(session.monitor, session.fleet)
            report.update(session.finish())
        except Exception as e:
            session.failures.append(f"harness: {type(e).__name__}: {e}")
        finally:
            session.close()
    report["fault_reports"] = session.faults
    report["failures"] = session.failures
    report["passed"] = not session.failures
    return report


def resource_samples(monitor, fleet, every_s=10):
    """Per host, every `every_s` s: [seconds, pid, RSS MiB, threads, open files] (the report keeps
    them, so a slope can be looked at again)."""
    with monitor.lock:
        samples = list(monitor.samples)
    out = {}
    for name in fleet.hosts:
        rows, last_t = [], -1e9
        for t, s in samples:
            e = s["hosts"].get(name, {})
            if "rss_bytes" in e and t - last_t >= every_s:
                rows.append([round(t, 1), e.get("pid"), round(e["rss_bytes"] / 2**20, 1),
                             e["threads"], e["open_files"]])
                last_t = t
        out[name] = rows
    return out


def resource_slopes(monitor, fleet, warmup_s=120):
    """Per host, over its longest-lived process (a restart starts a new one: a new pid), after
    that process's first `warmup_s` seconds, sampled every 10 s: the least squares slope per
    hour of RSS (MiB), threads and open files, and their ranges."""
    out = {}
    with monitor.lock:
        samples = list(monitor.samples)
    if not samples:
        return out
    for name in fleet.hosts:
        runs, current, last_t, pid = [], [], -1e9, None
        for t, s in samples:
            e = s["hosts"].get(name, {})
            if "rss_bytes" not in e or e.get("pid") != pid:
                if current:
                    runs.append(current)
                current, last_t = [], -1e9
                pid = e.get("pid") if "rss_bytes" in e else None
                if "rss_bytes" not in e:
                    continue
            if t - last_t >= 10:
                current.append((t, e))
                last_t = t
        if current:
            runs.append(current)
        best = max(runs, key=lambda r: r[-1][0] - r[0][0], default=[])
        best = [p for p in best if p[0] >= best[0][0] + warmup_s] if best else best
        if len(best) < 3:
            continue
        entry = {"samples": len(best), "span_s": round(best[-1][0] - best[0][0], 1),
                 "from_s": round(best[0][0], 1), "processes": len(runs)}
        for p in best:  # the window's size, for the replay shards' memory per position
            m = p[1].get("metrics")
            if m is not None:
                p[1]["positions"] = metric(m, "zf_replay_positions_stored")
        keys = [("rss_bytes", 2**20), ("threads", 1), ("open_files", 1)]
        if all(p[1].get("positions") is not None for p in best):
            keys.append(("positions", 1))
        for key, scale in keys:
            xs = [t / 3600 for t, _ in best]
            ys = [e[key] / scale for _, e in best]
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            var = sum((x - mx) ** 2 for x in xs)
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else 0.0
            label = {"rss_bytes": "rss_mib", "positions": "replay_positions"}.get(key, key)
            entry[label] = {"min": round(min(ys), 1), "max": round(max(ys), 1),
                            "slope_per_hour": round(slope, 2)}
        if "replay_positions" in entry and entry["replay_positions"]["slope_per_hour"] > 0:
            entry["rss_bytes_per_added_position"] = round(
                entry["rss_mib"]["slope_per_hour"] * 2**20 /
                entry["replay_positions"]["slope_per_hour"], 1)
        out[name] = entry
    return out


def machine():
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}
