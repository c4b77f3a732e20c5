#!/usr/bin/env python3
"""deploy/compose on a real Docker engine: images built, the fleet up, trained, scraped, faulted.

    deploy/tests/check_compose_engine.py --build BUILD [--report FILE] [--keep-images] [--full]

1. Images: `scripts/images --prebuilt BUILD --tag test-PID` (the binaries already built on this
   host, so nothing is compiled twice; compiling inside the image is `scripts/images` alone, the
   release path) and the Prometheus image from Debian's package.
2. `docker-compose -p zftestPID up -d` of every zerofleet service and Prometheus (Grafana has no
   image here: no hub, no Debian package), two actors, the small fleet of tests/multihost. The
   one thing added to the compose files is the namespace suite's acknowledgement log: each actor
   also writes the ids replay acknowledged to a directory of this host's (an override file).
   Measured: seconds from `up` to the first stored game and to the first version above 1 served.
3. Checked: every health check turns healthy; games reach replay; versions are published and
   served; Prometheus (in its container) has every target up, and every dashboard and alert
   query returns data (check_queries.py). Games/s over 20 s, against the same fleet as bare
   processes; each container's resident memory (`docker stats`), each image's size.
4. Faults: the scenarios of tests/multihost/chaos.py, written once, run through the engine
   (tests/multihost/enginefleet.py), with the namespace suite's JSON report (acknowledged vs
   found games, 0 duplicates, seconds back to 80% of the rate, versions never backwards):
   SIGKILL of the main process of replay-0, of the inference server and of the learner (what a
   crash or the OOM killer does; restarted by the restart policy, not by the test: `docker kill`
   would count as a manual stop, which `unless-stopped` does not undo); `docker pause` of the
   inference server (a gray failure); `docker network disconnect` of an actor and of replay-1 (a
   partition); `docker-compose up -d` of a new image tag under load (every container
   recreated). Outages are shortened as in the namespace suite's quick run (pause 5 s, actor
   partition 8 s); `--full` runs the issue's (15 s and 30 s). At the end every container is
   stopped as `docker-compose stop` would (actors first), and `zf replay ls` on the shards'
   volumes is held against every acknowledged id.
5. The same fleet again under the mutual-TLS override (docker-compose.tls.yml, certificates from
   scripts/make-certs): healthy, trains, every target up, every query with data.

Everything it made (containers, networks, volumes, test image tags, a dockerd it started) is
removed at the end, also after a failure; a dockerd it started leaves the host's firewall,
ip_forward and links as it found them. Traffic goes only to the containers it made (their
addresses on the compose network, and Prometheus's port published on 127.0.0.1).

Exit 0: passed; 1: failed; 77: skipped (not root, or no dockerd installed), with one line why.
"""
import argparse
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose" / "docker-compose.yml"
SKIP = 77
DOCKER = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else "docker"
sys.path.insert(0, str(ROOT / "tests" / "multihost"))
import chaos  # noqa: E402  the scenarios of the namespace suite, run here through the engine
from enginefleet import EngineFleet  # noqa: E402
from fleetlib import SMALL_FLEET_ENV, metric  # noqa: E402  the fleet the namespace suite runs

IMAGE_UID = 10001  # the images' zerofleet user (deploy/docker/Dockerfile)
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


class EngineUnavailable(Exception):
    """No Docker engine can run on this machine (the suite skips)."""


class Engine:
    """A Docker engine: the running one, or a dockerd started here and stopped by close(), which
    also takes back what that dockerd made on the host: its iptables chains and rules (dockerd
    adds DOCKER* chains and sets the FORWARD policy to DROP), net.ipv4.ip_forward, and docker0."""

    def __init__(self):
        self.started = None

    def ensure(self):
        if run([DOCKER, "info"], check=False, timeout=30).returncode == 0:
            return
        self.firewall = {table: run(["iptables-save", "-t", table], check=False).stdout
                         for table in ("filter", "nat")}
        self.ip_forward = pathlib.Path("/proc/sys/net/ipv4/ip_forward").read_text().strip()
        self.had_docker0 = pathlib.Path("/sys/class/net/docker0").exists()
        self.log_path = f"/tmp/zf-compose-engine-dockerd.{os.getpid()}.log"
        self.log_file = open(self.log_path, "w")
        self.started = subprocess.Popen(["dockerd"], stdout=self.log_file, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if run([DOCKER, "info"], check=False, timeout=30).returncode == 0:
                log("  started dockerd (stopped at the end, and its firewall rules removed)")
                return
            time.sleep(1)
        self.close()
        lines = pathlib.Path(self.log_path).read_text(errors="replace").strip().splitlines()
        raise EngineUnavailable("dockerd did not answer within 60 s"
                                + (f"; its last line: {lines[-1]}" if lines else ""))

    def close(self):
        if self.started is None:
            return
        self.started.terminate()
        try:
            self.started.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.started.kill()
        self.started = None
        self.log_file.close()
        pathlib.Path(self.log_path).unlink(missing_ok=True)
        # The host's firewall as it was: each table restored from its dump, or emptied if it had
        # none (it was made by dockerd).
        for table, dump in self.firewall.items():
            if "*" + table in dump:
                subprocess.run(["iptables-restore", "-T", table], input=dump, text=True,
                               capture_output=True)
            else:
                run(["iptables", "-t", table, "-F"], check=False)
                run(["iptables", "-t", table, "-X"], check=False)
        pathlib.Path("/proc/sys/net/ipv4/ip_forward").write_text(self.ip_forward + "\n")
        if not self.had_docker0 and pathlib.Path("/sys/class/net/docker0").exists():
            run(["ip", "link", "del", "docker0"], check=False)


class EngineRun:
    """One compose project on the engine: its images, its fleet (enginefleet.EngineFleet), the
    checks of this file, and the chaos scenarios of tests/multihost over it."""

    def __init__(self, build, keep_images, quick, tls=False):
        self.id = str(os.getpid())
        self.project = f"zftest{self.id}{'tls' if tls else ''}"
        self.tag = f"test-{self.id}"
        self.build = build
        self.zf = str(pathlib.Path(build) / "cli" / "zf")
        self.keep_images = keep_images
        self.quick = quick
        self.tls = tls
        self.failures = []
        self.report = {"project": self.project, "tls": tls}
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZF_")}
        env.update(SMALL_FLEET_ENV)
        self.prometheus_port = free_port()
        env.update({
            "ZF_IMAGE": f"zerofleet:{self.tag}", "ZF_ACTOR_IMAGE": f"zerofleet:actor-{self.tag}",
            "ZF_PROMETHEUS_IMAGE": "zerofleet-prometheus:debian12",
            # Published on loopback only ("HOST:PORT" is a valid left side of compose's mapping).
            "ZF_PROMETHEUS_PORT": f"127.0.0.1:{self.prometheus_port}",
        })
        self.scratch = pathlib.Path(f"/tmp/zf-compose-engine.{self.project}")
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.scratch.mkdir(parents=True)
        compose = ["docker-compose", "-p", self.project, "-f", str(COMPOSE)]
        if tls:
            # A CA and one certificate per role (scripts/make-certs), readable by the images'
            # user.
            certs = self.scratch / "certs"
            run([str(ROOT / "scripts" / "make-certs"), "--out", str(certs)], timeout=120)
            run(["chown", "-R", f"{IMAGE_UID}:{IMAGE_UID}", str(certs)])
            env["ZF_CERTS_DIR"] = str(certs)
            compose += ["-f", str(COMPOSE.parent / "docker-compose.tls.yml")]
        # The harness's one addition to the fleet, as in tests/multihost: each actor writes the
        # ids replay acknowledged to /acked/HOSTNAME.log, a directory of this host's.
        acked = self.scratch / "acked"
        acked.mkdir()
        os.chown(acked, IMAGE_UID, IMAGE_UID)
        override = self.scratch / "acked.yml"
        override.write_text(yaml.safe_dump({"services": {"actor": {
            "entrypoint": ["/bin/sh", "-c", 'exec /usr/local/bin/zf "$$@" '
                           '--acked_log=/acked/$$(hostname).log', "zf"],
            "volumes": [f"{acked}:/acked"]}}}))
        compose += ["-f", str(override)]
        self.compose = compose
        self.fleet = EngineFleet(self.project, compose, SERVICES, env, self.zf, acked)
        self.extra_tags = []

    def expect(self, ok, message):
        if not ok:
            self.failures.append(message)
            log(f"  FAIL: {message}")
        return ok

    def value(self, host, name):
        """The sum of a metric family on one host now (0 if it does not answer)."""
        return metric(self.fleet.hosts[host].scrape() or {}, name) or 0

    def stored_total(self):
        return sum(self.value(r, "zf_replay_inserts_total") for r in ("replay-0", "replay-1"))

    def wait_for(self, what, check, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(1)
        self.expect(False, f"{what}: not within {timeout} s")
        return None

    def health(self):
        out = {}
        for name, h in self.fleet.hosts.items():
            s = h.state()
            out[name] = s["State"].get("Health", {}).get("Status", s["State"]["Status"]) if s \
                else "missing"
        return out

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
        self.fleet.up()
        self.report["up_returned_s"] = round(time.monotonic() - t0, 1)
        first_game = self.wait_for("a game stored in replay", lambda: self.stored_total() > 0, 300)
        self.report["first_stored_game_s"] = round(time.monotonic() - t0, 1) if first_game else None
        first_version = self.wait_for(
            "a version above 1 served",
            lambda: self.value("inference", "zf_inference_model_version") > 1, 300)
        self.report["first_served_version_above_1_s"] = (
            round(time.monotonic() - t0, 1) if first_version else None)
        healthy = self.wait_for(
            "every container healthy",
            lambda: all(s in ("healthy", "running") for s in self.health().values()), 240)
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

    def games_rate(self, seconds=20):
        """Acknowledged games per second over `seconds` (stored by both shards), to hold against
        the same fleet as bare processes (tests/multihost's baseline)."""
        before, t0 = self.stored_total(), time.monotonic()
        time.sleep(seconds)
        rate = (self.stored_total() - before) / (time.monotonic() - t0)
        self.report["games_per_s"] = round(rate, 1)
        log(f"  {rate:.1f} games stored per second over {seconds} s")

    def memory(self):
        ids = [h.cid() for h in self.fleet.hosts.values()]
        out = run([DOCKER, "stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}"] +
                  [i for i in ids if i]).stdout
        self.report["memory"] = dict(line.split(" ", 1) for line in out.splitlines() if line)
        log(f"  memory: {self.report['memory']}")

    def chaos(self):
        """tests/multihost's scenarios through the engine (chaos.ENGINE_FAULTS), with the same
        report: acknowledged vs found games, duplicates, seconds back to 80% of the rate,
        versions never backwards, processes and their restarts. The rolling update goes to the
        same images under a second tag, so that every zerofleet container is recreated."""
        new_cpu, new_actor = f"zerofleet:{self.tag}-next", f"zerofleet:actor-{self.tag}-next"
        run([DOCKER, "tag", self.fleet.env["ZF_IMAGE"], new_cpu])
        run([DOCKER, "tag", self.fleet.env["ZF_ACTOR_IMAGE"], new_actor])
        self.extra_tags = [new_cpu, new_actor]
        self.fleet.next_release_env = {"ZF_IMAGE": new_cpu, "ZF_ACTOR_IMAGE": new_actor}
        session = chaos.Session(None, self.zf, self.quick, fleet=self.fleet,
                                log=lambda m: log("  " + m))
        report = {"faults": chaos.ENGINE_FAULTS, "quick": self.quick}
        report.update(session.run_faults(chaos.ENGINE_FAULTS))
        self.report["chaos"] = report
        self.failures += [f"chaos: {f}" for f in session.failures]
        log(f"  chaos: {len(session.faults)} faults, {report.get('games_acknowledged')} games "
            f"acknowledged, {report.get('acknowledged_missing_from_replay')} missing, "
            f"{report.get('stored_more_than_once')} stored twice")

    def close(self):
        if self.failures and run(self.compose + ["ps", "-q"], env=self.fleet.env,
                                 check=False).stdout.strip():
            logs = run(self.compose + ["logs", "--tail", "30"], env=self.fleet.env, check=False)
            log(logs.stdout[-6000:])
        run(self.compose + ["down", "-v", "--remove-orphans", "-t", "20"], env=self.fleet.env,
            check=False, timeout=300)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def remove_images(self):
        if not self.keep_images:
            run([DOCKER, "rmi", f"zerofleet:{self.tag}", f"zerofleet:actor-{self.tag}"] +
                self.extra_tags, check=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, help="the build directory with cli/zf")
    parser.add_argument("--report", help="write the JSON report here too")
    parser.add_argument("--keep-images", action="store_true")
    parser.add_argument("--full", action="store_true",
                        help="the issue's outage durations (docker pause 15 s, a partition 30 s) "
                             "in place of the shortened ones of make test")
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
    plain = tls = None
    try:
        plain = EngineRun(build, args.keep_images, quick=not args.full)
        log("plain fleet:")
        plain.images()
        plain.up()
        plain.prometheus()
        plain.games_rate()
        plain.memory()
        plain.chaos()
    except Exception as e:  # the report says what broke; teardown still runs
        if plain is None:
            raise
        plain.failures.append(f"harness: {type(e).__name__}: {e}")
        log(f"  FAIL: {plain.failures[-1]}")
    finally:
        if plain is not None:
            plain.close()
    try:
        if not plain.failures:
            # The mutual-TLS override on the same images: every call authenticated, still trains.
            tls = EngineRun(build, args.keep_images, quick=not args.full, tls=True)
            try:
                log("mutual-TLS fleet (docker-compose.tls.yml):")
                tls.up()
                tls.prometheus()
            except Exception as e:
                tls.failures.append(f"harness: {type(e).__name__}: {e}")
                log(f"  FAIL: {tls.failures[-1]}")
            finally:
                tls.close()
    finally:
        plain.remove_images()
        engine.close()
    report = plain.report
    if tls is not None:
        report["tls_fleet"] = tls.report
        plain.failures += [f"tls: {f}" for f in tls.failures]
    report["seconds"] = round(time.monotonic() - start, 1)
    report["failures"] = plain.failures
    report["passed"] = not plain.failures
    if args.report:
        pathlib.Path(args.report).write_text(json.dumps(report, indent=1))
    log(json.dumps({k: v for k, v in report.items() if k != "chaos"}))
    log("PASSED" if not plain.failures else "FAILED")
    return 0 if not plain.failures else 1


if __name__ == "__main__":
    sys.exit(main())
