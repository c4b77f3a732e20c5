"""The compose fleet on a real Docker engine, behind the interface of fleetlib.Fleet, so that the
scenarios of chaos.Session run unchanged against containers (deploy/tests/check_compose_engine.py)
as they do against namespaced processes (tests/multihost/fleet).

What each operation of a host means here:
  - kill9: SIGKILL of the container's main process (the child of its init), from this host's pid
    namespace, as a crash or the OOM killer does. `docker kill` would count as a manual stop,
    which `restart: unless-stopped` does not undo; a SIGKILL is restarted by the policy.
  - start: waits for the restart policy to have restarted the container and for its health check
    to pass (`docker start` only for a container the harness stopped). `restarts_by_policy` tells
    the scenarios that the fleet, not the harness, brings a killed process back.
  - signal(SIGSTOP) / signal(SIGCONT): `docker pause` / `docker unpause` (the cgroup freezer: the
    same gray failure, the process frozen with its connections open).
  - link(False) / link(True): `docker network disconnect` / `connect` with the service's alias
    (a partition; Prometheus and the actors find services by their aliases).
  - stop: `docker stop -t GRACE` (SIGTERM to init, which forwards it; SIGKILL after the grace).
  - rolling_update: `docker-compose up -d` of a new image tag: every zerofleet container is
    recreated, each stopped within its grace period.
  - volume_dirs / host_path: a named volume is `docker volume inspect`'s mount point, so the
    checks read (`zf replay ls`) and damage what the containers wrote.
The harness's acknowledgement logs: each actor runs `zf actor ... --acked_log=/acked/HOST.log`
(an entrypoint override the engine check writes) into a bind-mounted directory of this host's;
`acked_logs()` lists every file there, so a recreated actor (a new container, a new hostname)
starts a file of its own.

Containers are looked up by their compose labels (project, service, container number) on each
use, from the engine's API on its Unix socket (one list and one inspect per container, cached for
half a second): a monitor sampling every second must not start seven `docker` processes per
sample on a 2-core machine. Actions (pause, network connect, stop, logs) use the docker CLI.
"""
import http.client
import json
import os
import pathlib
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import fleetlib

DOCKER = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else "docker"


DOCKER_SOCKET = "/var/run/docker.sock"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def engine_api(path):
    """GET `path` of the Docker engine's API (its Unix socket); the decoded JSON."""
    connection = _UnixConnection(DOCKER_SOCKET)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"docker API GET {path}: {response.status} {body[:300]!r}")
        return json.loads(body)
    finally:
        connection.close()


def docker(*args, check=True, timeout=120):
    result = subprocess.run([DOCKER, *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"docker {' '.join(args)} exited {result.returncode}: "
                           f"{result.stderr.strip()[-1000:]}")
    return result


class EngineHost:
    """One container of the project: a service, or one replica (actor-N) of a scaled one."""

    def __init__(self, fleet, name, spec, service, number):
        self.fleet, self.name, self.spec = fleet, name, spec
        self.service, self.number = service, number
        self.role = spec["command"][0]
        self.grace_s = fleetlib.seconds_of(spec.get("stop_grace_period"), 10)
        self.acked_log = None  # the fleet's acked directory holds them (acked_logs())
        self.containers = []  # every container id this host has had (a rolling update adds one)
        self.old_restarts = 0  # restarts of the containers a rolling update removed
        self.crashes = []
        self.peak_rss_bytes = 0
        self.expected_restarts = {}  # container id -> restarts the harness caused
        self.stopped_by_harness = False
        self.old_logs = ""  # the logs of this host's containers that a rolling update removed
        self.cid_seen = None

    # ---- the container ----
    def state(self):
        """This host's `docker inspect` (the fleet's cached one), or None if it has none."""
        return self.fleet.inspect_all().get((self.service, self.number))

    def cid(self):
        s = self.state()
        if s is None:
            return None
        if s["Id"] not in self.containers:
            self.containers.append(s["Id"])
        self.cid_seen = s["Id"]
        return s["Id"]

    @property
    def starts(self):
        """Processes this host has run: one per container, plus its restarts."""
        return max(1, len(self.containers)) + self.old_restarts + self.restart_count()

    @property
    def address(self):
        s = self.state()
        if s is None:
            return None
        nets = s["NetworkSettings"]["Networks"]
        return next((n["IPAddress"] for n in nets.values() if n.get("IPAddress")), None)

    def alive(self):
        s = self.state()
        return s is not None and s["State"]["Running"] and not s["State"]["Restarting"]

    def pid(self):
        """The host pid of the container's main process (zf, under its init)."""
        s = self.state()
        if s is None or not s["State"]["Running"]:
            return None
        init = s["State"]["Pid"]
        try:
            children = pathlib.Path(f"/proc/{init}/task/{init}/children").read_text().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    def restart_count(self):
        s = self.state()
        return s["RestartCount"] if s else 0

    # ---- faults ----
    def signal(self, sig):
        cid = self.cid()
        if sig == signal.SIGSTOP:
            docker("pause", cid)
        elif sig == signal.SIGCONT:
            if self.state()["State"]["Paused"]:
                docker("unpause", cid)
        else:
            pid = self.pid()
            if pid is not None:
                os.kill(pid, sig)
        self.fleet.invalidate()

    def kill9(self):
        """SIGKILL of the main process; returns once it is gone (the policy restarts it)."""
        self.fleet.invalidate()
        cid = self.cid()
        pid = self.pid()
        self.expected_restarts[cid] = self.restart_count() + 1
        if pid is None:
            return
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and pathlib.Path(f"/proc/{pid}").exists():
            time.sleep(0.1)
        self.fleet.invalidate()

    def link(self, up):
        """The container's cable into the project network."""
        network = self.fleet.network
        if up:
            docker("network", "connect", "--alias", self.service, network, self.cid())
        else:
            docker("network", "disconnect", network, self.cid())
        self.fleet.invalidate()

    def stop(self, grace=None):
        """`docker stop -t GRACE`. Returns (seconds, exit code, hung)."""
        cid = self.cid()
        if cid is None or not self.state()["State"]["Running"]:
            return 0.0, None, False
        grace = self.grace_s if grace is None else grace
        self.stopped_by_harness = True
        start = time.monotonic()
        if self.state()["State"]["Paused"]:
            docker("unpause", cid)
        docker("stop", "-t", str(int(grace)), cid, timeout=grace + 60)
        seconds = time.monotonic() - start
        self.fleet.invalidate()
        code = self.state()["State"]["ExitCode"]
        return seconds, code, code == 137 and seconds >= grace

    # ---- what it says ----
    def healthy(self):
        s = self.state()
        if s is None or not s["State"]["Running"]:
            return False
        health = s["State"].get("Health")
        return health is None or health["Status"] == "healthy"

    # The same as a namespaced host's: the port from its command line, /metrics at its address.
    metrics_port = fleetlib.Host.metrics_port
    scrape = fleetlib.Host.scrape

    def logs_of(self, cid):
        out = docker("logs", cid, check=False, timeout=60)
        return out.stdout + out.stderr

    def log_text(self):
        cid = self.cid()
        return self.old_logs + (self.logs_of(cid) if cid else "")

    # ---- volumes ----
    def _volumes(self):
        for volume in self.spec.get("volumes", []) or []:
            if isinstance(volume, dict):
                yield volume.get("type", "volume"), volume["source"], volume["target"]
            else:
                source, target = volume.split(":")[:2]
                yield ("bind" if source.startswith("/") else "volume"), source, target

    def host_path(self, path):
        for kind, source, target in self._volumes():
            if path == target or path.startswith(target.rstrip("/") + "/"):
                base = source if kind == "bind" else str(self.fleet.volume_dir(source))
                return base + path[len(target.rstrip("/")):]
        return path

    def volume_dirs(self):
        return [self.fleet.volume_dir(source) for kind, source, _ in self._volumes()
                if kind == "volume"]


class EngineFleet:
    """The compose project `project`, brought up by up(), as a chaos fleet.

    `compose` is the docker-compose command line with its -p and -f arguments; `services` the
    services `up` starts; `env` the
    environment it runs with (image tags and the fleet's settings); `zf` the host's binary that
    the checks run (`zf replay ls`, `zf replay verify`) on the volumes; `acked_dir` the host
    directory mounted at /acked in the actors."""

    restarts_by_policy = True

    def __init__(self, project, compose, services, env, zf, acked_dir, actors=2):
        self.project, self.compose, self.env = project, list(compose), dict(env)
        self.services = list(services)  # what `up` starts (Prometheus too; Grafana has no image)
        self.next_release_env = None
        self.zf = str(pathlib.Path(zf).resolve())
        self.acked_dir = pathlib.Path(acked_dir)
        self.actors = actors
        self.network = f"{project}_default"
        self.lock = threading.Lock()
        self.cache, self.cache_at = {}, -1e9
        self.volumes = {}
        files = [pathlib.Path(a) for prev, a in zip(self.compose, self.compose[1:])
                 if prev == "-f"]
        services = fleetlib.compose_services(self.env, files)
        self.hosts = {}
        for name in fleetlib.Fleet._start_order(services):
            for r in range(actors if name == "actor" else 1):
                host = f"actor-{r + 1}" if name == "actor" else name
                self.hosts[host] = EngineHost(self, host, services[name], name, r + 1)
        self.is_up = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass  # the engine check's close() runs `docker-compose down -v`

    def by_role(self, role):
        return [h for h in self.hosts.values() if h.role == role]

    # ---- the project's containers ----
    def invalidate(self):
        with self.lock:
            self.cache_at = -1e9

    def inspect_all(self):
        """{(service, container number): docker inspect} of the project, at most 0.5 s old."""
        with self.lock:
            if time.monotonic() - self.cache_at < 0.5:
                return self.cache
            filters = json.dumps({"label": [f"com.docker.compose.project={self.project}"]})
            listed = engine_api("/containers/json?all=1&filters=" + urllib.parse.quote(filters))
            found = {}
            for entry in listed:
                try:
                    c = engine_api(f"/containers/{entry['Id']}/json")
                except RuntimeError:  # removed since it was listed
                    continue
                labels = c["Config"]["Labels"]
                key = (labels.get("com.docker.compose.service"),
                       int(labels.get("com.docker.compose.container-number", "1")))
                # A recreated container's old one may linger for a moment: the newest wins.
                if key not in found or c["Created"] > found[key]["Created"]:
                    found[key] = c
            self.cache, self.cache_at = found, time.monotonic()
            return found

    def volume_dir(self, source):
        if source not in self.volumes:
            self.volumes[source] = pathlib.Path(docker(
                "volume", "inspect", "-f", "{{.Mountpoint}}",
                f"{self.project}_{source}").stdout.strip())
        return self.volumes[source]

    def acked_logs(self):
        """[(key, path)] of every acknowledgement log the actors wrote."""
        if not self.acked_dir.is_dir():
            return []
        return [(p.name, p) for p in sorted(self.acked_dir.glob("*.log"))]

    # ---- lifecycle (the interface of fleetlib.Fleet) ----
    def up(self):
        docker_compose(self.compose + ["up", "-d", "--scale", f"actor={self.actors}"] +
                       self.services, self.env)
        self.is_up = True
        self.invalidate()

    def create_network(self):
        if not self.is_up:
            raise RuntimeError("the engine fleet is brought up by its check (EngineFleet.up)")

    def mount_tmpfs(self, path, size_bytes):
        raise RuntimeError("disk-full is not a fault of the engine fleet (no tmpfs volume here)")

    def start(self, host, timeout=180, **_):
        """Waits for the container to be running again (restarted by its policy, or started here
        if the harness stopped it) and healthy."""
        deadline = time.monotonic() + timeout
        cid = host.cid()
        want = host.expected_restarts.get(cid, 0)
        if host.stopped_by_harness:
            docker("start", cid)
            host.stopped_by_harness = False
            self.invalidate()
        while time.monotonic() < deadline:
            self.invalidate()
            if host.restart_count() >= want and host.healthy():
                return
            time.sleep(0.5)
        raise RuntimeError(f"{host.name} not running and healthy {timeout} s after its restart:\n"
                           f"{host.log_text()[-3000:]}")

    def wait_healthy(self, host, timeout=180):
        self.start(host, timeout)

    def check_crashes(self):
        """Hosts whose container restarted (or stopped) without the harness causing it."""
        crashed = []
        for h in self.hosts.values():
            s = h.state()
            if s is None:
                continue
            expected = h.expected_restarts.get(s["Id"], 0)
            if s["RestartCount"] > expected:
                h.expected_restarts[s["Id"]] = s["RestartCount"]
                h.crashes.append(s["State"]["ExitCode"])
                crashed.append(h.name)
            elif not s["State"]["Running"] and not h.stopped_by_harness and \
                    not s["State"]["Restarting"] and s["RestartCount"] >= expected:
                h.stopped_by_harness = True  # reported once
                h.crashes.append(s["State"]["ExitCode"])
                crashed.append(h.name)
        return crashed

    def alert_source(self):
        """(None, why): the alert checks need Prometheus's 2 s scrapes, and the compose
        Prometheus scrapes every 10 s (its targets and queries are checked by the engine check)."""
        return None, "the compose Prometheus scrapes every 10 s: the 30 s alert bounds are not checked"

    def rolling_update(self):
        """`docker-compose up -d` with `next_release_env` (a new image tag, set by the check):
        every container whose image changed is recreated, in dependency order, each stopped with
        its grace period."""
        if not self.next_release_env:
            raise RuntimeError("rolling-update: no next release (EngineFleet.next_release_env)")
        for h in self.hosts.values():
            if h.cid():  # its logs and restarts outlive the container
                h.old_logs += h.logs_of(h.cid_seen)
                h.old_restarts += h.restart_count()
        self.env.update(self.next_release_env)
        start = time.monotonic()
        docker_compose(self.compose + ["up", "-d", "--scale", f"actor={self.actors}"] +
                       self.services, self.env)
        self.invalidate()
        for h in self.hosts.values():
            h.cid()
            self.start(h)
        images = {h.name: h.state()["Config"]["Image"] for h in self.hosts.values()}
        return {"up_s": round(time.monotonic() - start, 1), "images": images}


def docker_compose(argv, env, timeout=900):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:6])} ... exited {result.returncode}:\n"
                           f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return result
