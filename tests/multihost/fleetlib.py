"""The multi-host fleet: deploy/compose/docker-compose.yml run as real `zf` processes, each service
in its own Linux network namespace ("host") on a bridge, with no Docker daemon.

What is taken from the compose file (resolved by `docker-compose config`, so variable defaults and
anchors mean what Compose says they mean): every zerofleet service's command line, environment,
health check, depends_on conditions, stop_grace_period and named volumes. What the harness does in
Docker's place:
  - a host per service (`--actors N` replicas of `actor`: actor-1..actor-N): a network namespace
    `zfmh<id>-<service>` with one veth into the bridge `zfmh<id>`, its own address 10.213.<k>.<n>,
    loopback up, and /etc/netns/<ns>/hosts naming every service (`ip netns exec` bind-mounts it
    over /etc/hosts, so `replay-0:7400` resolves as on a Compose network);
  - a named volume is a directory under the run directory; arguments under its mount target
    (`--dir=/data/replay`) are rewritten to that directory;
  - the image's entrypoint is the `zf` binary of the build.
The harness adds one flag of its own: `--acked_log FILE` on each actor, the ids of the games
replay acknowledged (what "nothing acknowledged is lost" is checked against).
With `tls=True` the fleet runs the mutual-TLS override (deploy/compose/docker-compose.tls.yml)
too, with certificates that scripts/make-certs writes into the run directory (a bind mount, used
in place); health checks run with their service's environment, as in a container.

Everything is created by Fleet.up() and removed by Fleet.down(), also after a failure (callers
use it as a context manager) and by `fleet down` for what a killed harness left behind. Traffic
goes only between the bridge (the root namespace's side, for scraping /metrics) and the
namespaces made here.
"""
import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
COMPOSE = REPO / "deploy" / "compose" / "docker-compose.yml"
COMPOSE_TLS = REPO / "deploy" / "compose" / "docker-compose.tls.yml"
COMPOSE_INFERENCE_PAIR = REPO / "deploy" / "compose" / "docker-compose.inference-pair.yml"
MAKE_CERTS = REPO / "scripts" / "make-certs"
PREFIX = "zfmh"
SKIP = 77

# Settings for a fleet that fits a 2-core machine beside its tests: tic-tac-toe, a tiny network,
# short searches, frequent checkpoints (so versions move), one thread per process. They go
# through the compose file's own variables.
SMALL_FLEET_ENV = {
    "ZF_GAME": "tictactoe", "ZF_BLOCKS": "1", "ZF_FILTERS": "16", "ZF_SIMS": "16",
    "ZF_ACTOR_WORKERS": "1", "ZF_GAMES_PER_WORKER": "16", "ZF_MAX_BATCH": "64",
    "ZF_MAX_DELAY_US": "2000", "ZF_REPLAY_CAPACITY": "2000000", "ZF_REPLAY_MIN_SIZE": "300",
    "ZF_SAMPLES_PER_INSERT": "2", "ZF_ERROR_BUFFER": "1000000000", "ZF_BATCH_SIZE": "32",
    "ZF_STEPS_PER_CHECKPOINT": "40", "ZF_LEARNER_THREADS": "1", "ZF_INFERENCE_THREADS": "1",
    "ZF_EVAL_GAMES": "2", "ZF_EVAL_SIMS": "8",
}


class NeedsRoot(Exception):
    """This machine cannot create network namespaces; the message says why, in one line."""


def run(argv, check=True, timeout=30, **kw):
    return subprocess.run(argv, check=check, timeout=timeout, capture_output=True, text=True, **kw)


def can_make_namespaces():
    """None if namespaces can be made here, else the one-line reason."""
    if os.geteuid() != 0:
        return "multihost: needs root to create network namespaces (ip netns); skipping"
    if shutil.which("ip") is None:
        return "multihost: the ip command (iproute2) is missing; skipping"
    probe = f"{PREFIX}probe{os.getpid() % 10000}"
    result = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if result.returncode != 0:
        return f"multihost: cannot create a network namespace: {result.stderr.strip()}; skipping"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def seconds_of(duration, default):
    if duration is None:
        return default
    total = 0.0
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", str(duration)):
        total += float(amount) * {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}[unit]
    return total


def compose_services(env_overrides, files=(COMPOSE,)):
    """The zerofleet services of the compose files, resolved by `docker-compose config`."""
    tool = shutil.which("docker-compose")
    if tool is None:
        raise NeedsRoot("multihost: docker-compose (Debian's, to resolve deploy/compose) is missing;"
                        " skipping")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZF_")}
    env.update(env_overrides)
    argv = [tool]
    for f in files:
        argv += ["-f", str(f)]
    out = run(argv + ["config"], env=env, timeout=120).stdout
    services = yaml.safe_load(out)["services"]
    # zerofleet:TAG and zerofleet:actor-TAG (not zerofleet-prometheus, a Prometheus image).
    return {name: s for name, s in services.items()
            if re.match(r"zerofleet(:|$)", str(s.get("image", "")))}


def parse_metrics(text):
    """Prometheus text -> {(name, frozenset(labels)): value}."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)", line)
        if not m:
            continue
        labels = frozenset(re.findall(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        try:
            samples[(m.group(1), labels)] = float(m.group(4))
        except ValueError:
            pass
    return samples


def metric(samples, name, **labels):
    """Sum of a family's samples whose labels include `labels` (None if there is none)."""
    want = set(labels.items())
    values = [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]
    return sum(values) if values else None


def proc_stats(pid):
    """RSS, peak RSS (bytes), threads and open files of a live process, or None."""
    try:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = dict(re.findall(r"^(\w+):\s+(\d+)", status, flags=re.MULTILINE))
    return {"rss_bytes": int(fields.get("VmRSS", 0)) * 1024,
            "peak_rss_bytes": int(fields.get("VmHWM", 0)) * 1024,
            "threads": int(fields.get("Threads", 0)), "open_files": fds}


class Host:
    """One service instance: its namespace, address, command and process."""

    def __init__(self, fleet, name, spec, index):
        self.fleet, self.name, self.spec = fleet, name, spec
        self.role = spec["command"][0]
        self.ns = f"{fleet.prefix}-{name}"
        self.veth = f"{fleet.prefix}h{index}"
        self.address = f"{fleet.subnet}.{10 + index}"
        self.dir = fleet.dir / "hosts" / name
        self.proc = None
        self.starts = 0
        self.expected_exit = True  # set False while running; a death we did not cause is a crash
        self.crashes = []
        self.peak_rss_bytes = 0
        self.grace_s = seconds_of(spec.get("stop_grace_period"), 10)
        self.acked_log = self.dir / "acked.log" if self.role == "actor" else None

    # The volume directory a container path lives in, and the rewritten path. A named volume is
    # a directory of this host's; a bind mount (an absolute source) is used in place.
    def host_path(self, path):
        for volume in self.spec.get("volumes", []) or []:
            target = volume["target"] if isinstance(volume, dict) else volume.split(":")[1]
            source = volume["source"] if isinstance(volume, dict) else volume.split(":")[0]
            if path == target or path.startswith(target.rstrip("/") + "/"):
                base = source if source.startswith("/") else str(self.dir / "volumes" / source)
                return base + path[len(target.rstrip("/")):]
        return path

    def volume_dirs(self):
        out = []
        for volume in self.spec.get("volumes", []) or []:
            source = volume["source"] if isinstance(volume, dict) else volume.split(":")[0]
            if not source.startswith("/"):
                out.append(self.dir / "volumes" / source)
        return out

    def environment(self):
        """The service's environment, paths under its volumes rewritten as in argv."""
        return {k: self.host_path(str(v)) if str(v).startswith("/") else str(v)
                for k, v in (self.spec.get("environment") or {}).items()}

    def argv(self, zf=None, acked_log=True):
        args = []
        for arg in self.spec["command"][1:]:
            m = re.fullmatch(r"(--[a-z_]+=)(/.*)", arg)
            args.append(m.group(1) + self.host_path(m.group(2)) if m else arg)
        if self.acked_log is not None and acked_log:
            args.append(f"--acked_log={self.acked_log}")
        env = [f"{k}={v}" for k, v in self.environment().items()]
        return (["ip", "netns", "exec", self.ns, "env"] + env +
                [zf or self.fleet.zf, self.role] + args)

    def start(self, zf=None, acked_log=True):
        """Starts the service (`zf`: another binary, e.g. the previous release; `acked_log`:
        False for a binary that has no --acked_log)."""
        for d in self.volume_dirs():
            d.mkdir(parents=True, exist_ok=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        out = open(self.dir / f"{self.role}.{self.starts}.stdout", "wb")
        err = open(self.dir / f"{self.role}.{self.starts}.stderr", "wb")
        # `ip netns exec` and `env` exec the next program, so the pid is zf's own.
        self.proc = subprocess.Popen(self.argv(zf, acked_log), stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=err, start_new_session=True)
        out.close()
        err.close()
        self.expected_exit = False
        self.started_at = time.monotonic()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def pid(self):
        return self.proc.pid if self.alive() else None

    def signal(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)

    def kill9(self):
        self.expected_exit = True
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=30)

    def stop(self, grace=None):
        """SIGTERM, then SIGKILL after the grace period. Returns (seconds, exit code, hung)."""
        if not self.alive():
            return 0.0, (self.proc.returncode if self.proc else None), False
        self.expected_exit = True
        start = time.monotonic()
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=grace if grace is not None else self.grace_s)
            return time.monotonic() - start, code, False
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
            return time.monotonic() - start, None, True

    def healthy(self):
        test = (self.spec.get("healthcheck") or {}).get("test")
        if not test:
            return self.alive()
        argv = [self.fleet.zf if a == "zf" else a for a in test[1:]]
        env = [f"{k}={v}" for k, v in self.environment().items()]
        try:
            result = subprocess.run(["ip", "netns", "exec", self.ns, "env"] + env + argv,
                                    capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            return False
        return result.returncode == 0

    def metrics_port(self):
        for arg in self.spec["command"]:
            m = re.fullmatch(r"--metrics_listen=.*:(\d+)", arg)
            if m:
                return int(m.group(1))
        return None

    def scrape(self, timeout=2.0):
        port = self.metrics_port()
        if port is None or not self.alive():
            return None
        try:
            with urllib.request.urlopen(f"http://{self.address}:{port}/metrics",
                                        timeout=timeout) as r:
                return parse_metrics(r.read().decode())
        except OSError:
            return None

    def log_text(self):
        return "".join((self.dir / f"{self.role}.{i}.{k}").read_text(errors="replace")
                       for i in range(1, self.starts + 1) for k in ("stdout", "stderr")
                       if (self.dir / f"{self.role}.{i}.{k}").exists())

    def link(self, up):
        """The host's network cable: down drops every packet to and from it."""
        run(["ip", "netns", "exec", self.fleet.switch, "ip", "link", "set", self.veth,
             "up" if up else "down"])


class Fleet:
    """The compose fleet on namespaced hosts. Use as a context manager: `with Fleet(...) as f`.
    (tests/multihost/enginefleet.py is the same interface over containers on a Docker engine.)"""

    # The harness starts a killed process again (fleet.start); on an engine the restart policy
    # does.
    restarts_by_policy = False

    def __init__(self, run_dir, zf, actors=2, env=None, tls=False, inference_servers=1):
        self.dir = pathlib.Path(run_dir).resolve()
        self.tls = tls
        self.zf = str(pathlib.Path(zf).resolve())
        self.id = "%04x" % (os.getpid() & 0xffff)
        self.prefix = f"{PREFIX}{self.id}"
        self.bridge = self.prefix  # the host's end of the veth pair into the switch
        self.switch = f"{self.prefix}sw"  # the namespace that holds the bridge
        self.subnet = f"10.213.{(os.getpid() % 200) + 20}"
        self.env = dict(SMALL_FLEET_ENV)
        self.env.update(env or {})
        files = [COMPOSE]
        if tls:
            certs = self.dir / "certs"
            run([str(MAKE_CERTS), "--out", str(certs)], timeout=120)
            self.env["ZF_CERTS_DIR"] = str(certs)
            files.append(COMPOSE_TLS)
        if inference_servers > 1:  # the compose override that runs them, not a harness flag
            self.env["ZF_INFERENCE_REPLICAS"] = str(inference_servers)
            files.append(COMPOSE_INFERENCE_PAIR)
        services = compose_services(self.env, files)
        self.order = self._start_order(services)
        self.hosts = {}
        self.service_of = {}  # host name -> the compose service it is a replica of
        index = 0
        for name in self.order:
            spec = services[name]
            # Actors: --actors N; any other service: its deploy.replicas (compose's scale).
            replicas = actors if name == "actor" else int((spec.get("deploy") or {})
                                                          .get("replicas", 1))
            for r in range(replicas):
                index += 1
                host_name = f"{name}-{r + 1}" if name == "actor" or replicas > 1 else name
                self.hosts[host_name] = Host(self, host_name, spec, index)
                self.service_of[host_name] = name
        self.created = False
        self.mounts = []

    @staticmethod
    def _start_order(services):
        order, seen = [], set()

        def visit(name):
            if name in seen:
                return
            seen.add(name)
            for dep in (services[name].get("depends_on") or {}):
                if dep in services:
                    visit(dep)
            order.append(name)
        for name in sorted(services):
            visit(name)
        return order

    def by_role(self, role):
        return [h for h in self.hosts.values() if h.role == role]

    def acked_logs(self):
        """[(key, path)] of the actors' acknowledgement logs (one per actor host)."""
        return [(h.name, h.acked_log) for h in self.by_role("actor")]

    def alert_source(self):
        """(a started-on-demand Prometheus evaluating deploy/prometheus/alerts.yml, or None, and
        why not)."""
        if not Prometheus.available():
            return None, "no prometheus binary: the alert checks are skipped"
        return Prometheus(self), None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.down()

    # ---- network ----
    def create_network(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "fleet.json").write_text(json.dumps(
            {"prefix": self.prefix, "bridge": self.bridge, "switch": self.switch,
             "namespaces": [h.ns for h in self.hosts.values()]}))
        self.created = True
        # The bridge lives in a namespace of the fleet's own (the "switch"), not in the host's:
        # frames between hosts are bridged there, so the host's firewall never sees them. Docker
        # sets the host's iptables FORWARD policy to DROP with bridge netfilter on, which dropped
        # every frame of a bridge in the host's namespace. The host reaches the fleet through one
        # veth pair into the switch (its own address, subnet.1), as traffic it sends and
        # receives, not forwards.
        run(["ip", "netns", "add", self.switch])
        sw = ["ip", "netns", "exec", self.switch]
        run(sw + ["ip", "link", "add", "br0", "type", "bridge"])
        run(sw + ["ip", "link", "set", "br0", "up"])
        run(sw + ["ip", "link", "set", "lo", "up"])
        run(["ip", "link", "add", self.bridge, "type", "veth", "peer", "name", "uplink", "netns",
             self.switch])
        run(sw + ["ip", "link", "set", "uplink", "master", "br0"])
        run(sw + ["ip", "link", "set", "uplink", "up"])
        run(["ip", "addr", "add", f"{self.subnet}.1/24", "dev", self.bridge])
        run(["ip", "link", "set", self.bridge, "up"])
        # As on a Compose network, a replicated service's name resolves to every replica's
        # address (glibc returns each line of the name, /etc/host.conf `multi on`), and each
        # replica has its own name too; actors are never called by name.
        hosts_file = "127.0.0.1 localhost\n" + "".join(
            f"{h.address} {h.name}" +
            (f" {self.service_of[h.name]}" if h.role != "actor" and
             self.service_of[h.name] != h.name else "") + "\n"
            for h in self.hosts.values())
        for h in self.hosts.values():
            run(["ip", "netns", "add", h.ns])
            etc = pathlib.Path("/etc/netns") / h.ns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(hosts_file + f"127.0.1.1 {h.name}-self\n")
            run(["ip", "link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns",
                 h.ns])
            run(["ip", "link", "set", h.veth, "netns", self.switch])
            run(sw + ["ip", "link", "set", h.veth, "master", "br0"])
            run(sw + ["ip", "link", "set", h.veth, "up"])
            run(["ip", "netns", "exec", h.ns, "ip", "addr", "add", f"{h.address}/24", "dev",
                 "eth0"])
            run(["ip", "netns", "exec", h.ns, "ip", "link", "set", "eth0", "up"])
            run(["ip", "netns", "exec", h.ns, "ip", "link", "set", "lo", "up"])

    def mount_tmpfs(self, path, size_bytes):
        path = pathlib.Path(path)
        path.mkdir(parents=True, exist_ok=True)
        run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "zfmh-tmpfs", str(path)])
        self.mounts.append(path)

    # ---- processes ----
    def start(self, host, zf=None, wait_healthy=True, timeout=180, acked_log=True):
        host.start(zf, acked_log)
        if wait_healthy:
            self.wait_healthy(host, timeout)

    def wait_healthy(self, host, timeout=180):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not host.alive():
                raise RuntimeError(f"{host.name} exited with {host.proc.returncode} while starting:"
                                   f"\n{host.log_text()[-3000:]}")
            if host.healthy():
                return time.monotonic() - host.started_at
            time.sleep(0.5)
        raise RuntimeError(f"{host.name} not healthy after {timeout} s:\n{host.log_text()[-3000:]}")

    def up(self):
        """Creates the hosts and starts every service in depends_on order, each once the ones it
        depends on answer their health checks (as `condition: service_healthy` does)."""
        self.create_network()
        for h in self.hosts.values():
            self.start(h)
        return self

    def check_crashes(self):
        """Hosts whose process died without the harness stopping or killing it."""
        crashed = []
        for h in self.hosts.values():
            if h.proc is not None and not h.expected_exit and h.proc.poll() is not None:
                h.expected_exit = True
                h.crashes.append(h.proc.returncode)
                crashed.append(h.name)
        return crashed

    def down(self):
        for h in reversed(list(self.hosts.values())):
            if h.alive():
                h.expected_exit = True
                h.signal(signal.SIGCONT)
                h.signal(signal.SIGKILL)
                try:
                    h.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pass
        for path in reversed(self.mounts):
            subprocess.run(["umount", "-l", str(path)], capture_output=True)
        self.mounts = []
        if self.created:
            cleanup(self.prefix)
            self.created = False


def cleanup(prefix=PREFIX):
    """Removes every namespace, link and /etc/netns entry whose name starts with `prefix`, after
    killing what runs in those namespaces. Returns what it removed."""
    removed = []
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in listed.splitlines():
        ns = line.split()[0] if line.split() else ""
        if not ns.startswith(prefix):
            continue
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                              text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(pathlib.Path("/etc/netns") / ns, ignore_errors=True)
        removed.append(ns)
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    for m in re.finditer(r"^\d+:\s+([^:@\s]+)", links, flags=re.MULTILINE):
        if m.group(1).startswith(prefix):
            subprocess.run(["ip", "link", "del", m.group(1)], capture_output=True)
            removed.append(m.group(1))
    return removed


# The metric families the monitor keeps from each scrape.
MONITORED = {
    "zf_inference_open_streams", "zf_inference_model_version", "zf_actor_model_version",
    "zf_inference_evaluations_total", "zf_inference_client_requests_moved_total",
    "zf_learner_steps_total", "zf_replay_writer_insert_retries_total",
    "zf_replay_log_write_errors_total", "zf_replay_inserts_total", "zf_replay_positions_stored",
    "zf_replay_writer_unacknowledged_games",
}


class Monitor(threading.Thread):
    """Samples the fleet every `interval` s: acknowledged games (the actors' acked logs), each
    process's metrics, and each process's RSS, threads and open files."""

    def __init__(self, fleet, interval=1.0):
        super().__init__(daemon=True)
        self.fleet, self.interval = fleet, interval
        self.samples = []  # (t, {"acked": n, "hosts": {name: {...}}})
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.offsets = {}
        self.acked_ids = {}  # id -> count of acknowledgements seen in the logs
        self.acked_order = []
        self.t0 = time.monotonic()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=16,
                                                          thread_name_prefix="scrape")

    def read_acked(self):
        for key, path in self.fleet.acked_logs():
            if not path.exists():
                continue
            with open(path, "rb") as f:
                f.seek(self.offsets.get(key, 0))
                data = f.read()
            cut = data.rfind(b"\n") + 1  # whole lines only
            self.offsets[key] = self.offsets.get(key, 0) + cut
            for line in data[:cut].decode().splitlines():
                if line:
                    if line not in self.acked_ids:
                        self.acked_order.append(line)
                    self.acked_ids[line] = self.acked_ids.get(line, 0) + 1

    def sample(self):
        with self.lock:
            self.read_acked()
            acked = len(self.acked_order)
        def one(h):
            entry = {"alive": h.alive()}
            pid = h.pid()
            if pid is not None:
                entry["pid"] = pid  # a restart is a new pid: resource slopes are per process
                stats = proc_stats(pid)
                if stats:
                    entry.update(stats)
                    h.peak_rss_bytes = max(h.peak_rss_bytes, stats["peak_rss_bytes"])
                m = h.scrape(timeout=min(1.0, 0.8 * self.interval))
                if m is not None:  # only what the checks read: an hour of samples stays small
                    entry["metrics"] = {k: v for k, v in m.items() if k[0] in MONITORED}
            return h.name, entry
        # Every host at once: a stopped process's scrape times out without delaying the others'.
        t = time.monotonic() - self.t0
        hosts = dict(self.pool.map(one, list(self.fleet.hosts.values())))
        with self.lock:
            self.samples.append((t, {"acked": acked, "hosts": hosts}))

    def run(self):
        while not self.stopping.is_set():
            start = time.monotonic()
            try:
                self.sample()
            except Exception as e:  # a sampling error must not stop the monitor
                print(f"monitor: {e}", flush=True)
            self.stopping.wait(max(0.0, self.interval - (time.monotonic() - start)))

    def stop(self):
        self.stopping.set()
        self.join(timeout=10)
        self.pool.shutdown(wait=False)
        with self.lock:
            self.read_acked()

    def now(self):
        return time.monotonic() - self.t0

    def acked_rate(self, t_from, t_to):
        """Acknowledged games/s between two monitor times (from the nearest samples)."""
        with self.lock:
            pts = [(t, s["acked"]) for t, s in self.samples if t_from <= t <= t_to]
        if len(pts) < 2 or pts[-1][0] - pts[0][0] <= 0:
            return 0.0
        return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])

    def lowest_acked_rate(self, t_from, t_to, window_s):
        """The lowest acknowledged games/s over any `window_s` seconds between two monitor times
        (windows start at every sample; None if the span is shorter than one window)."""
        with self.lock:
            pts = [(t, s["acked"]) for t, s in self.samples if t_from <= t <= t_to]
        lowest = None
        for i, (ta, a) in enumerate(pts):
            later = [(t, b) for t, b in pts[i + 1:] if t - ta >= window_s]
            if not later:
                break
            tb, b = later[0]
            rate = (b - a) / (tb - ta)
            lowest = rate if lowest is None else min(lowest, rate)
        return lowest

    def counter_increase(self, host, name, t_from, t_to, from_zero=False, **labels):
        """A counter's increase on one host over the samples between two monitor times: a
        restart's reset counts from zero; `from_zero`: the first sample counts whole (its process
        started at zero)."""
        pts = [v for t, v in self.series(host, name, **labels) if t_from <= t <= t_to]
        total = sum(b - a if b >= a else b for a, b in zip(pts, pts[1:]))
        return total + (pts[0] if from_zero and pts else 0.0)

    def counter_rate(self, host, name, t_from, t_to):
        """A counter's increase per second on one host between two monitor times (None without
        two samples)."""
        times = [t for t, _ in self.series(host, name) if t_from <= t <= t_to]
        if len(times) < 2 or times[-1] <= times[0]:
            return None
        return self.counter_increase(host, name, t_from, t_to) / (times[-1] - times[0])

    def median_acked_rate(self, t_from, t_to):
        """The median of the per-sample acknowledged games/s between two monitor times: a steady
        rate, not thrown off by a burst (a backlog flushed after an earlier fault) or a late
        sample."""
        with self.lock:
            pts = [(t, s["acked"]) for t, s in self.samples if t_from <= t <= t_to]
        rates = sorted((b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(pts, pts[1:]) if b[0] > a[0])
        if not rates:
            return 0.0
        mid = len(rates) // 2
        return rates[mid] if len(rates) % 2 else (rates[mid - 1] + rates[mid]) / 2

    def samples_between(self, t_from, t_to):
        """[(t, sample)] of the samples between two monitor times."""
        with self.lock:
            return [(t, s) for t, s in self.samples if t_from <= t <= t_to]

    def series(self, host, name, **labels):
        with self.lock:
            out = []
            for t, s in self.samples:
                m = s["hosts"].get(host, {}).get("metrics")
                if m is not None:
                    v = metric(m, name, **labels)
                    if v is not None:
                        out.append((t, v))
            return out

    def latest(self, host, name, **labels):
        s = self.series(host, name, **labels)
        return s[-1][1] if s else None


class Prometheus:
    """A real Prometheus (Debian's `prometheus`) on the root side of the bridge, scraping every
    host every 2 s with the jobs of deploy/prometheus/prometheus.yml and evaluating
    deploy/prometheus/alerts.yml, so a chaos run can check that each fault raises its alert."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.dir = fleet.dir / "prometheus"
        self.proc = None
        self.port = None

    @staticmethod
    def available():
        return shutil.which("prometheus") is not None

    def start(self):
        import socket
        self.dir.mkdir(parents=True, exist_ok=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        jobs = {}
        for h in self.fleet.hosts.values():
            port = h.metrics_port()
            if port is not None:
                jobs.setdefault(f"zf-{h.role}", []).append(
                    {"targets": [f"{h.address}:{port}"], "labels": {"instance": f"{h.name}:{port}"}})
        config = {
            "global": {"scrape_interval": "2s", "scrape_timeout": "1s",
                       "evaluation_interval": "2s"},
            "rule_files": [str(REPO / "deploy" / "prometheus" / "alerts.yml")],
            "scrape_configs": [{"job_name": job, "static_configs": targets}
                               for job, targets in sorted(jobs.items())],
        }
        (self.dir / "prometheus.yml").write_text(yaml.safe_dump(config))
        log = open(self.dir / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={self.dir / 'prometheus.yml'}",
             f"--storage.tsdb.path={self.dir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError("prometheus not ready after 60 s")

    def alerts(self):
        """[(alertname, labels dict, state)] of every pending or firing alert."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/alerts",
                                        timeout=5) as r:
                data = json.loads(r.read().decode())
        except OSError:
            return []
        return [(a["labels"].get("alertname"), a["labels"], a["state"])
                for a in data.get("data", {}).get("alerts", [])]

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
