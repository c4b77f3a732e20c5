#!/usr/bin/env python3
"""deploy/compose on a real Docker engine: images built, the fleet up, trained, scraped, faulted.

    deploy/tests/check_compose_engine.py --build BUILD [--report FILE] [--keep-images]

1. Images: `scripts/images --prebuilt BUILD --tag test-PID` (the binaries already built on this
   host, so nothing is compiled twice; compiling inside the image is `scripts/images` alone, the
   release path) and the Prometheus image from Debian's package.
2. `docker-compose -p zftestPID up -d` of every zerofleet service and Prometheus (Grafana has no
   image here: no hub, no Debian package), two actors, the small fleet of tests/multihost.
   Measured: seconds from `up` to the first stored game and to the first version above 1 served.
3. Checked: every health check turns healthy; games reach replay; versions are published and
   served; Prometheus (in its container) has every target up, and every dashboard and alert
   query returns data (check_queries.py).
4. Faults: SIGKILL of replay-0's main process (what a crash or the OOM killer does; `docker kill`
   would count as a manual stop, which `unless-stopped` does not undo): the restart policy brings
   it back and it still holds every game it had stored. `docker pause` of the inference server
   for 10 s (a gray failure): games are stored again after `docker unpause`. `docker network
   disconnect` of an actor for 15 s (a partition): its games are acknowledged again after it is
   connected back. SIGKILL of the inference server and of the learner: restarted by the policy,
   the version never goes backwards, games flow again. Games/s over 20 s, against the same fleet
   as bare processes. Last, `docker-compose up -d` of a new image tag under load: every
   container recreated, no game lost, versions not backwards, games flowing again.
5. Each container's resident memory (`docker stats`), each image's size.
6. The same fleet again under the mutual-TLS override (docker-compose.tls.yml, certificates from
   scripts/make-certs): healthy, trains, every target up, every query with data.

Everything it made (containers, networks, volumes, test image tags, a dockerd it started) is
removed at the end, also after a failure. Traffic goes only to the containers it made (their
addresses on the compose network, and Prometheus's port published on 127.0.0.1).

Exit 0: passed; 1: failed; 77: skipped (not root, or no dockerd installed), with one line why.
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose" / "docker-compose.yml"
SKIP = 77
DOCKER = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else "docker"
sys.path.insert(0, str(ROOT / "tests" / "multihost"))
from fleetlib import SMALL_FLEET_ENV  # noqa: E402  the fleet the namespace suite runs

SERVICES = ["replay-0", "replay-1", "learner", "inference", "actor", "evaluator", "prometheus"]


def log(message):
    print(message, flush=True)


def run(argv, timeout=600, check=True, env=None):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {result.returncode}:\n"
                           f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return result


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(address):
    """{name{labels}: value} of one /metrics page, or None if it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=3) as r:
            text = r.read().decode()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            try:
                out[key] = float(value)
            except ValueError:
                pass
    return out


def total(metrics, name):
    return sum(v for k, v in (metrics or {}).items() if k == name or k.startswith(name + "{"))


class EngineUnavailable(Exception):
    """No Docker engine can run on this machine (the suite skips)."""


class Engine:
    """A Docker engine: the running one, or a dockerd started here (and stopped by close())."""

    def __init__(self):
        self.started = None

    def ensure(self):
        if run([DOCKER, "info"], check=False, timeout=30).returncode == 0:
            return
        self.log_path = f"/tmp/zf-compose-engine-dockerd.{os.getpid()}.log"
        self.log_file = open(self.log_path, "w")
        self.started = subprocess.Popen(["dockerd"], stdout=self.log_file, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if run([DOCKER, "info"], check=False, timeout=30).returncode == 0:
                log("  started dockerd (stopped at the end)")
                return
            time.sleep(1)
        self.close()
        lines = pathlib.Path(self.log_path).read_text(errors="replace").strip().splitlines()
        raise EngineUnavailable("dockerd did not answer within 60 s"
                                + (f"; its last line: {lines[-1]}" if lines else ""))

    def close(self):
        if self.started is not None:
            self.started.terminate()
            try:
                self.started.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.started.kill()
            self.started = None
            self.log_file.close()
            pathlib.Path(self.log_path).unlink(missing_ok=True)


class Session:
    def __init__(self, build, keep_images, tls=False):
        self.id = str(os.getpid())
        self.project = f"zftest{self.id}{'tls' if tls else ''}"
        self.tag = f"test-{self.id}"
        self.build = build
        self.keep_images = keep_images
        self.tls = tls
        self.failures = []
        self.report = {"project": self.project, "tls": tls}
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ZF_")}
        self.env.update(SMALL_FLEET_ENV)
        self.prometheus_port = free_port()
        self.env.update({
            "ZF_IMAGE": f"zerofleet:{self.tag}", "ZF_ACTOR_IMAGE": f"zerofleet:actor-{self.tag}",
            "ZF_PROMETHEUS_IMAGE": "zerofleet-prometheus:debian12",
            # Published on loopback only ("HOST:PORT" is a valid left side of compose's mapping).
            "ZF_PROMETHEUS_PORT": f"127.0.0.1:{self.prometheus_port}",
        })
        self.compose = ["docker-compose", "-p", self.project, "-f", str(COMPOSE)]
        self.certs = None
        self.extra_tags = []
        if tls:
            # A CA and one certificate per role (scripts/make-certs), readable by the images'
            # user; removed by close().
            self.certs = pathlib.Path(f"/tmp/zf-compose-engine-certs.{self.id}")
            run([str(ROOT / "scripts" / "make-certs"), "--out", str(self.certs)], timeout=120)
            run(["chown", "-R", "10001:10001", str(self.certs)])
            self.env["ZF_CERTS_DIR"] = str(self.certs)
            self.compose += ["-f", str(COMPOSE.parent / "docker-compose.tls.yml")]

    def expect(self, ok, message):
        if not ok:
            self.failures.append(message)
            log(f"  FAIL: {message}")
        return ok

    # ---- containers ----
    def containers(self):
        """{service or service-N: container id} of this project."""
        out = run([DOCKER, "ps", "-a", "--filter", f"label=com.docker.compose.project={self.project}",
                   "--format", "{{.ID}} {{.Label \"com.docker.compose.service\"}} "
                   "{{.Label \"com.docker.compose.container-number\"}}"]).stdout
        found = {}
        for line in out.split("\n"):
            if not line.strip():
                continue
            cid, service, number = line.split()
            found[service if service != "actor" else f"actor-{number}"] = cid
        return found

    def inspect(self, cid):
        return json.loads(run([DOCKER, "inspect", cid]).stdout)[0]

    def address(self, service, port):
        c = self.inspect(self.containers()[service])
        nets = c["NetworkSettings"]["Networks"]
        return f"{next(iter(nets.values()))['IPAddress']}:{port}"

    def health(self):
        out = {}
        for name, cid in self.containers().items():
            state = self.inspect(cid)["State"]
            out[name] = state.get("Health", {}).get("Status", state["Status"])
        return out

    def wait_for(self, what, check, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(1)
        self.expect(False, f"{what}: not within {timeout} s")
        return None

    # ---- steps ----
    def images(self):
        start = time.monotonic()
        run([str(ROOT / "scripts" / "images"), "--prebuilt", self.build, "--tag", self.tag],
            timeout=1800)
        self.report["images_build_s"] = round(time.monotonic() - start, 1)
        sizes = {}
        for image in ("debian:12-slim", f"zerofleet:{self.tag}", f"zerofleet:actor-{self.tag}",
                      "zerofleet-prometheus:debian12"):
            size = int(run([DOCKER, "image", "inspect", "-f", "{{.Size}}", image]).stdout)
            sizes[image] = round(size / 1e6)
        self.report["image_mb"] = sizes
        log(f"  images in {self.report['images_build_s']} s: {sizes}")

    def up(self):
        t0 = time.monotonic()
        run(self.compose + ["up", "-d", "--scale", "actor=2"] + SERVICES, env=self.env,
            timeout=900)
        self.report["up_returned_s"] = round(time.monotonic() - t0, 1)
        replay = [self.address("replay-0", 9400), self.address("replay-1", 9400)]
        inference = self.address("inference", 9300)
        first_game = self.wait_for(
            "a game stored in replay",
            lambda: sum(total(scrape(a), "zf_replay_inserts_total") for a in replay) > 0, 300)
        self.report["first_stored_game_s"] = round(time.monotonic() - t0, 1) if first_game else None
        first_version = self.wait_for(
            "a version above 1 served",
            lambda: total(scrape(inference), "zf_inference_model_version") > 1, 300)
        self.report["first_served_version_above_1_s"] = (
            round(time.monotonic() - t0, 1) if first_version else None)
        healthy = self.wait_for(
            "every container healthy",
            lambda: all(s in ("healthy", "running") for s in self.health().values()) and
            self.health(), 240)
        self.report["health"] = self.health()
        self.expect(healthy, f"health: {self.report['health']}")
        log(f"  up: {self.report['up_returned_s']} s to `up -d` returning, first stored game at "
            f"{self.report['first_stored_game_s']} s, first version above 1 served at "
            f"{self.report['first_served_version_above_1_s']} s")

    def prometheus(self):
        url = f"http://127.0.0.1:{self.prometheus_port}"

        def targets():
            try:
                with urllib.request.urlopen(f"{url}/api/v1/targets", timeout=5) as r:
                    active = json.load(r)["data"]["activeTargets"]
            except (OSError, ValueError, KeyError):
                return None
            health = {f"{t['labels']['job']}/{t['labels']['instance']}": t["health"]
                      for t in active}
            actors = sum(1 for k in health if k.startswith("zf-actor/"))
            if actors == 2 and len(health) >= 7 and all(h == "up" for h in health.values()):
                return health
            return None
        up = self.wait_for("every Prometheus target up", targets, 180)
        self.report["prometheus_targets"] = up
        result = run([sys.executable, str(ROOT / "deploy" / "tests" / "check_queries.py"), url,
                      "--wait", "180"], check=False, timeout=400)
        self.report["queries"] = result.stdout.strip().splitlines()[-1:] if result.stdout else []
        self.expect(result.returncode == 0,
                    f"check_queries.py: {result.stdout[-1500:]}{result.stderr[-500:]}")

    def kill_replay(self):
        """SIGKILL of replay-0's zf (a child of the container's init), from the host."""
        address = self.address("replay-0", 9400)
        before = self.wait_for("replay-0 metrics", lambda: scrape(address), 30)
        games_before = total(before, "zf_replay_games_stored")
        t0 = time.monotonic()
        restarted = self.kill_main_process("replay-0")
        address = self.address("replay-0", 9400)
        self.wait_for("replay-0 answering again", lambda: scrape(address), 120)
        metrics_at = time.monotonic() - t0
        # Its /metrics answers before the log is recovered (games_stored reads 0 until then):
        # wait for the recovery, bounded; a shard that lost games never gets there.
        recovered = self.wait_for(
            f"replay-0 holding its {int(games_before)} games again",
            lambda: total(scrape(address), "zf_replay_games_stored") >= games_before, 120)
        games_after = total(scrape(address), "zf_replay_games_stored")
        self.report["replay_kill"] = {
            "games_stored_before": int(games_before), "games_recovered": int(games_after),
            "restart_policy_restarted": bool(restarted),
            "seconds_to_metrics_again": round(metrics_at, 1),
            "seconds_to_games_recovered": round(time.monotonic() - t0, 1) if recovered else None}
        self.expect(games_after >= games_before,
                    f"replay-0 held {games_before} games before SIGKILL, {games_after} after")
        log(f"  replay-0 SIGKILL: {self.report['replay_kill']}")

    def kill_main_process(self, service):
        """SIGKILL of a service's zf (the child of the container's init), from the host, as a
        crash or the OOM killer would; returns once the restart policy has restarted it."""
        cid = self.containers()[service]
        starts_before = self.inspect(cid)["RestartCount"]
        init_pid = self.inspect(cid)["State"]["Pid"]
        children = pathlib.Path(f"/proc/{init_pid}/task/{init_pid}/children").read_text().split()
        self.expect(children, f"{service}: no process under the container's init")
        for pid in children:
            os.kill(int(pid), 9)
        return self.wait_for(f"{service} restarted by its policy",
                             lambda: self.inspect(cid)["RestartCount"] > starts_before, 60)

    def kill_inference_and_learner(self):
        """SIGKILL of the inference server, then of the learner: each is restarted by its policy,
        the version served never goes backwards, and games flow again."""
        for service, port, name in (("inference", 9300, "zf_inference_model_version"),
                                    ("learner", 9500, "zf_learner_published_version")):
            version_before = total(scrape(self.address(service, port)), name)
            t0 = time.monotonic()
            restarted = self.kill_main_process(service)
            address = self.address(service, port)
            back = self.wait_for(f"{service} back at version {int(version_before)} or later",
                                 lambda: total(scrape(address), name) >= version_before, 180)
            stored = self.stored_total()
            flowing = self.wait_for(f"games stored again after {service}'s restart",
                                    lambda: self.stored_total() > stored + 10, 120)
            self.report[f"{service}_kill"] = {
                "version_before": int(version_before),
                "version_after": int(total(scrape(address), name)),
                "restart_policy_restarted": bool(restarted),
                "seconds_to_version_again": round(time.monotonic() - t0, 1) if back else None,
                "games_flowing_again": bool(flowing)}
            log(f"  {service} SIGKILL: {self.report[f'{service}_kill']}")

    def rolling_update(self):
        """`docker-compose up -d` of a new image tag under load (the same image under a second
        tag, so every zerofleet container is recreated, in dependency order, each stopped with
        its grace period): every shard keeps its games, versions never go backwards, games flow
        again on the new containers."""
        new_cpu, new_actor = f"zerofleet:{self.tag}-next", f"zerofleet:actor-{self.tag}-next"
        run([DOCKER, "tag", self.env["ZF_IMAGE"], new_cpu])
        run([DOCKER, "tag", self.env["ZF_ACTOR_IMAGE"], new_actor])
        self.extra_tags = [new_cpu, new_actor]
        games = {r: total(scrape(self.address(r, 9400)), "zf_replay_games_stored")
                 for r in ("replay-0", "replay-1")}
        version = total(scrape(self.address("inference", 9300)), "zf_inference_model_version")
        self.env.update({"ZF_IMAGE": new_cpu, "ZF_ACTOR_IMAGE": new_actor})
        t0 = time.monotonic()
        run(self.compose + ["up", "-d", "--scale", "actor=2"] + SERVICES, env=self.env,
            timeout=900)
        up_s = time.monotonic() - t0
        images = {name: self.inspect(cid)["Config"]["Image"]
                  for name, cid in self.containers().items() if name != "prometheus"}
        self.expect(all(i in (new_cpu, new_actor) for i in images.values()),
                    f"rolling update: containers still on the old tag: {images}")
        for r, before in games.items():
            address = self.address(r, 9400)
            self.wait_for(f"{r} holding its {int(before)} games after the update",
                          lambda: total(scrape(address), "zf_replay_games_stored") >= before, 120)
        inference = self.address("inference", 9300)
        self.wait_for("inference back at its version after the update",
                      lambda: total(scrape(inference), "zf_inference_model_version") >= version,
                      180)
        stored = self.stored_total()
        flowing = self.wait_for("games stored on the new containers",
                                lambda: self.stored_total() > stored + 10, 120)
        self.report["rolling_update"] = {
            "up_s": round(up_s, 1), "seconds_to_games_flowing": round(
                time.monotonic() - t0, 1) if flowing else None}
        log(f"  rolling update to a new tag: {self.report['rolling_update']}")

    def games_rate(self, seconds=20):
        """Acknowledged games per second over `seconds` (stored by both shards), to hold against
        the same fleet as bare processes (tests/multihost's baseline)."""
        before, t0 = self.stored_total(), time.monotonic()
        time.sleep(seconds)
        rate = (self.stored_total() - before) / (time.monotonic() - t0)
        self.report["games_per_s"] = round(rate, 1)
        log(f"  {rate:.1f} games stored per second over {seconds} s")

    def stored_total(self):
        return sum(total(scrape(self.address(r, 9400)), "zf_replay_inserts_total")
                   for r in ("replay-0", "replay-1"))

    def pause_inference(self, seconds):
        """`docker pause` of the inference server (a gray failure: the process frozen, its
        connections open): self-play stops, and resumes by itself after `docker unpause`."""
        cid = self.containers()["inference"]
        run([DOCKER, "pause", cid])
        time.sleep(1)
        stored_paused = self.stored_total()
        time.sleep(seconds - 1)
        during = self.stored_total() - stored_paused
        run([DOCKER, "unpause", cid])
        t0 = time.monotonic()
        resumed_at = self.stored_total()
        back = self.wait_for("games stored again after docker unpause of inference",
                             lambda: self.stored_total() > resumed_at + 10, 120)
        self.report["pause_inference"] = {
            "paused_s": seconds, "games_stored_while_paused": int(during),
            "seconds_to_10_more_games_after_unpause":
                round(time.monotonic() - t0, 1) if back else None}
        log(f"  docker pause inference: {self.report['pause_inference']}")

    def disconnect_actor(self, seconds):
        """`docker network disconnect` of one actor (a partition), then connect again with the
        service's alias (Prometheus finds actors by it): its games are acknowledged again."""
        cid = self.containers()["actor-1"]
        networks = list(self.inspect(cid)["NetworkSettings"]["Networks"])
        network = networks[0]
        acked = lambda: total(scrape(self.address("actor-1", 9600)),  # noqa: E731
                              "zf_replay_writer_acked_games_total")
        run([DOCKER, "network", "disconnect", network, cid])
        time.sleep(seconds)
        run([DOCKER, "network", "connect", "--alias", "actor", network, cid])
        t0 = time.monotonic()
        before = self.wait_for("actor-1 metrics after reconnecting", acked, 60) or 0
        back = self.wait_for("actor-1's games acknowledged again after the partition",
                             lambda: (acked() or 0) > before, 120)
        self.report["disconnect_actor"] = {
            "partition_s": seconds,
            "seconds_to_an_acknowledged_game_after":
                round(time.monotonic() - t0, 1) if back else None}
        log(f"  docker network disconnect actor-1: {self.report['disconnect_actor']}")

    def memory(self):
        out = run([DOCKER, "stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}"] +
                  list(self.containers().values())).stdout
        self.report["memory"] = dict(line.split(" ", 1) for line in out.splitlines() if line)
        log(f"  memory: {self.report['memory']}")

    def close(self):
        if run(self.compose + ["ps", "-q"], env=self.env, check=False).stdout.strip() and \
                self.failures:
            logs = run(self.compose + ["logs", "--tail", "30"], env=self.env, check=False)
            log(logs.stdout[-6000:])
        run(self.compose + ["down", "-v", "--remove-orphans", "-t", "20"], env=self.env,
            check=False, timeout=300)
        if self.certs is not None:
            shutil.rmtree(self.certs, ignore_errors=True)

    def remove_images(self):
        if not self.keep_images:
            run([DOCKER, "rmi", f"zerofleet:{self.tag}", f"zerofleet:actor-{self.tag}"] +
                self.extra_tags, check=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, help="the build directory with cli/zf")
    parser.add_argument("--report", help="write the JSON report here too")
    parser.add_argument("--keep-images", action="store_true")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("compose engine: needs root to run a Docker engine; skipping")
        return SKIP
    for tool in ("dockerd", "docker-compose", "mmdebstrap"):
        if shutil.which(tool) is None and not (tool == "dockerd" and run(
                [DOCKER, "info"], check=False).returncode == 0):
            print(f"compose engine: {tool} is not installed (scripts/bootstrap installs it); "
                  "skipping")
            return SKIP
    engine = Engine()
    start = time.monotonic()
    try:
        engine.ensure()
    except EngineUnavailable as e:
        print(f"compose engine: no Docker engine can run here ({e}); skipping")
        return SKIP
    build = str(pathlib.Path(args.build).resolve())
    plain = Session(build, args.keep_images)
    tls = None
    try:
        log("plain fleet:")
        plain.images()
        plain.up()
        plain.prometheus()
        plain.games_rate()
        plain.kill_replay()
        plain.kill_inference_and_learner()
        plain.pause_inference(seconds=10)
        plain.disconnect_actor(seconds=15)
        plain.memory()
        plain.rolling_update()
    except Exception as e:  # the report says what broke; teardown still runs
        plain.failures.append(f"harness: {type(e).__name__}: {e}")
        log(f"  FAIL: {plain.failures[-1]}")
    finally:
        plain.close()
    if not plain.failures:
        # The mutual-TLS override on the same images: every call authenticated, still trains.
        tls = Session(build, args.keep_images, tls=True)
        try:
            log("mutual-TLS fleet (docker-compose.tls.yml):")
            tls.up()
            tls.prometheus()
        except Exception as e:
            tls.failures.append(f"harness: {type(e).__name__}: {e}")
            log(f"  FAIL: {tls.failures[-1]}")
        finally:
            tls.close()
    plain.remove_images()
    engine.close()
    session = plain
    if tls is not None:
        session.report["tls_fleet"] = tls.report
        session.failures += [f"tls: {f}" for f in tls.failures]
    session.report["seconds"] = round(time.monotonic() - start, 1)
    session.report["failures"] = session.failures
    session.report["passed"] = not session.failures
    if args.report:
        pathlib.Path(args.report).write_text(json.dumps(session.report, indent=1))
    log(json.dumps(session.report))
    log("PASSED" if not session.failures else "FAILED")
    return 0 if not session.failures else 1


if __name__ == "__main__":
    sys.exit(main())
