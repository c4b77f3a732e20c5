#!/usr/bin/env python3
"""Validates deploy/compose with `docker-compose config` (alone and with the GPU override) and
checks the resolved services: flags and ports agree with fleet_spec.py, gRPC health checks on
every server, start order on health, one volume per stateful service, grace periods, images
(actors on zerofleet:actor, also with the GPU override), GPU reservations only in the override,
the gating override (the evaluator serves accepted versions, inference loads from it, nothing
else changes), the two-inference-server override (two replicas under one name, alone and with
the GPU override), and that Prometheus scrapes exactly the compose services.

    deploy/tests/check_compose.py [--docker-compose docker-compose] [--zf build/cli/zf]

Exit 0: all checks passed; 1: a check failed; 77: docker-compose is missing (ctest: skipped).
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys

import yaml

from fleet_spec import (COMPONENTS, GATE_GRPC, GRACE_MARGIN_S, Checker, check_against_binary,
                        parse_flags, port_of)

DEPLOY = pathlib.Path(__file__).resolve().parents[1]
BASE = DEPLOY / "compose" / "docker-compose.yml"
GPU = DEPLOY / "compose" / "docker-compose.gpu.yml"
TLS = DEPLOY / "compose" / "docker-compose.tls.yml"
GATE = DEPLOY / "compose" / "docker-compose.gate.yml"
PAIR = DEPLOY / "compose" / "docker-compose.inference-pair.yml"
SKIP = 77
SERVICES = {"inference": "inference", "replay-0": "replay", "replay-1": "replay",
            "learner": "learner", "actor": "actor", "evaluator": "evaluator"}
# Who must be healthy before whom.
DEPENDS = {"learner": {"replay-0", "replay-1"}, "inference": {"learner"},
           "actor": {"inference", "replay-0", "replay-1"}, "evaluator": {"learner"},
           "grafana": {"prometheus"}}
STATEFUL = {"replay-0", "replay-1", "learner", "evaluator"}
# Services found by DNS (every replica's address under the service's name), not by a fixed list.
SCALED = {"actor", "inference"}
# The default image of each component where it is not zerofleet:cpu (deploy/docker/Dockerfile's
# actor stage: zf without LibTorch); GPU services run zerofleet:cuda (docker-compose.gpu.yml).
IMAGES = {"actor": "zerofleet:actor"}


def seconds(duration):
    total = 0.0
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", str(duration)):
        total += float(amount) * {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}[unit]
    return total


def compose_config(tool, files):
    command = [tool]
    for f in files:
        command += ["-f", str(f)]
    # Settings must come from the files' defaults, not from whoever runs the test.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZF_")}
    result = subprocess.run(command + ["config"], capture_output=True, text=True, timeout=120,
                            env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} config failed:\n{result.stderr}")
    return yaml.safe_load(result.stdout)


def check_fleet(c, label, config, gpu, used_flags):
    services = config.get("services", {})
    c.expect(set(SERVICES) | {"prometheus", "grafana"} <= set(services),
             f"{label}: services {sorted(services)}")
    volume_sources = {}
    for name, component in SERVICES.items():
        service = services.get(name)
        where = f"{label}/{name}"
        if not c.expect(service is not None, f"{where}: missing"):
            continue
        spec = COMPONENTS[component]
        try:
            command, flags = parse_flags(service.get("command", []))
        except (ValueError, IndexError) as error:
            c.expect(False, f"{where}: command {service.get('command')}: {error}")
            continue
        used_flags.setdefault(component, set()).update(flags)
        c.expect(command == component, f"{where}: runs `zf {command}`")
        c.expect(not set(flags) - spec["flags"],
                 f"{where}: unknown flags {sorted(set(flags) - spec['flags'])}")
        c.expect(not spec["required"] - set(flags),
                 f"{where}: missing flags {sorted(spec['required'] - set(flags))}")
        c.expect(port_of(flags.get("metrics_listen", ":0")) == spec["metrics"],
                 f"{where}: --metrics_listen port {spec['metrics']}")
        c.expect(seconds(service.get("stop_grace_period", "10s"))
                 >= spec["drain_s"] + GRACE_MARGIN_S,
                 f"{where}: stop_grace_period {service.get('stop_grace_period')} < drain "
                 f"{spec['drain_s']}s + {GRACE_MARGIN_S}s")
        c.expect(service.get("image", "").startswith("zerofleet:"), f"{where}: zerofleet image")
        if spec["grpc"] is not None:
            c.expect(port_of(flags.get("listen", ":0")) == spec["grpc"],
                     f"{where}: --listen port {spec['grpc']}")
            test = service.get("healthcheck", {}).get("test", [])
            c.expect(test == ["CMD", "zf", "health", f"--target=localhost:{spec['grpc']}"],
                     f"{where}: gRPC health check on its port, got {test}")
            # `zf health` must accept the flags the health check passes (checked with --zf).
            used_flags.setdefault("health", set()).update(
                a[2:].split("=")[0] for a in test[3:] if a.startswith("--"))
        if name in SCALED:
            c.expect("container_name" not in service and "ports" not in service,
                     f"{where}: scalable (no container_name, no host ports)")
        depends = service.get("depends_on", {})
        for dependency in DEPENDS.get(name, ()):
            c.expect(isinstance(depends, dict) and
                     depends.get(dependency, {}).get("condition") == "service_healthy",
                     f"{where}: starts after {dependency} is healthy")
        volumes = [v for v in service.get("volumes", []) if isinstance(v, str)]
        data = [v.split(":")[0] for v in volumes if v.split(":")[1] == "/data"]
        if name in STATEFUL:
            if c.expect(len(data) == 1 and data[0] in config.get("volumes", {}),
                        f"{where}: a named volume at /data, got {volumes}"):
                volume_sources.setdefault(data[0], []).append(name)
            c.expect(flags.get("dir", "").startswith("/data/"), f"{where}: --dir under /data")
        devices = (service.get("deploy", {}).get("resources", {}).get("reservations", {})
                   .get("devices", []))
        wants_gpu = gpu and name in ("inference", "learner")
        c.expect(bool(devices) == wants_gpu and all(d.get("driver") == "nvidia" for d in devices),
                 f"{where}: GPU reservation {'expected' if wants_gpu else 'unexpected'}")
        # Actors run the image without LibTorch, with or without GPUs; the CUDA image only
        # where a GPU is reserved.
        image = "zerofleet:cuda" if wants_gpu else IMAGES.get(component, "zerofleet:cpu")
        c.expect(service["image"] == image, f"{where}: image {service['image']}, expected {image}")
    c.expect(all(len(users) == 1 for users in volume_sources.values()),
             f"{label}: each stateful service has its own volume: {volume_sources}")

    # Addresses between services.
    def flag(service, name):
        try:
            return parse_flags(services[service]["command"])[1].get(name)
        except (KeyError, ValueError, IndexError):
            return None
    shards = ",".join(f"replay-{i}:{COMPONENTS['replay']['grpc']}" for i in range(2))
    c.expect(flag("learner", "replay") == shards, f"{label}: learner --replay={shards}")
    c.expect(flag("actor", "replay") == shards, f"{label}: actor --replay={shards}")
    c.expect(flag("actor", "inference") == f"inference:{COMPONENTS['inference']['grpc']}",
             f"{label}: actor --inference")
    c.expect(flag("inference", "model_service") == f"learner:{COMPONENTS['learner']['grpc']}",
             f"{label}: inference --model_service")
    c.expect(flag("evaluator", "model_service") == f"learner:{COMPONENTS['learner']['grpc']}",
             f"{label}: evaluator --model_service")
    c.expect(flag("evaluator", "gate") is None, f"{label}: the evaluator gates only with "
             "docker-compose.gate.yml")
    for name, dependency_names in DEPENDS.items():
        for dependency in dependency_names:
            c.expect("healthcheck" in services.get(dependency, {}),
                     f"{label}: {dependency} has a health check ({name} waits for it)")

    # Prometheus and Grafana get the files of deploy/.
    prometheus_mounts = services.get("prometheus", {}).get("volumes", [])
    c.expect(f"{DEPLOY / 'prometheus'}:/etc/prometheus:ro" in prometheus_mounts,
             f"{label}: deploy/prometheus mounted at /etc/prometheus")
    grafana_mounts = services.get("grafana", {}).get("volumes", [])
    provider = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/zerofleet.yml")
                              .read_text())["providers"][0]["options"]["path"]
    c.expect(f"{DEPLOY / 'grafana/dashboards'}:{provider}:ro" in grafana_mounts,
             f"{label}: dashboards mounted where the provider reads them ({provider})")
    c.expect(f"{DEPLOY / 'grafana/provisioning'}:/etc/grafana/provisioning:ro" in grafana_mounts,
             f"{label}: provisioning mounted")


def check_tls(c, config, base):
    """The mutual-TLS override: every zerofleet service gets its role's certificate, the CA for
    both directions, and the certificates' directory read-only at /certs."""
    services = config["services"]
    for name, role in SERVICES.items():
        where = f"compose+tls/{name}"
        service = services.get(name, {})
        env = service.get("environment") or {}
        c.expect({k: v for k, v in env.items() if k.startswith("ZF_TLS_")} ==
                 {"ZF_TLS_CERT": f"/certs/{role}.pem", "ZF_TLS_KEY": f"/certs/{role}.key",
                  "ZF_TLS_CA": "/certs/ca.pem", "ZF_TLS_CLIENT_CA": "/certs/ca.pem"},
                 f"{where}: ZF_TLS_* name {role}'s certificate and the CA, got {env}")
        mounts = [v for v in service.get("volumes", []) if isinstance(v, str)]
        c.expect(any(v.endswith(":/certs:ro") for v in mounts),
                 f"{where}: the certificates mounted read-only at /certs, got {mounts}")
        # Everything else is the base file's.
        c.expect(base is None or service.get("command") == base["services"][name].get("command"),
                 f"{where}: the override changes the command line")


def check_gate(c, config, base, used_flags):
    """The gating override: the evaluator adds --gate and its SPRT flags and serves on GATE_GRPC
    with a health check; inference loads from it and waits for it; nothing else changes."""
    services = config["services"]
    try:
        _, evaluator = parse_flags(services["evaluator"]["command"])
        _, base_evaluator = parse_flags(base["services"]["evaluator"]["command"])
        _, inference = parse_flags(services["inference"]["command"])
        _, base_inference = parse_flags(base["services"]["inference"]["command"])
    except (KeyError, ValueError, IndexError) as error:
        c.expect(False, f"compose+gate: {error}")
        return
    used_flags.setdefault("evaluator", set()).update(evaluator)
    added = {k: v for k, v in evaluator.items() if base_evaluator.get(k) != v}
    c.expect(set(added) == {"gate", "gate_listen", "sprt_elo0", "sprt_elo1", "max_gate_games"}
             and added["gate"] == "true" and port_of(added["gate_listen"]) == GATE_GRPC,
             f"compose+gate/evaluator: adds --gate --gate_listen=:{GATE_GRPC} and SPRT flags "
             f"only, got {added}")
    c.expect(base_evaluator.items() <= evaluator.items(),
             "compose+gate/evaluator: keeps the base command's flags")
    test = services["evaluator"].get("healthcheck", {}).get("test", [])
    c.expect(test == ["CMD", "zf", "health", f"--target=localhost:{GATE_GRPC}"],
             f"compose+gate/evaluator: gRPC health check on {GATE_GRPC}, got {test}")
    changed = {k for k in set(inference) | set(base_inference)
               if inference.get(k) != base_inference.get(k)}
    c.expect(changed == {"model_service"} and
             inference["model_service"] == f"evaluator:{GATE_GRPC}",
             f"compose+gate/inference: only --model_service changes, to evaluator:{GATE_GRPC}; "
             f"changed {sorted(changed)}")
    depends = services["inference"].get("depends_on", {})
    c.expect(depends.get("evaluator", {}).get("condition") == "service_healthy",
             "compose+gate/inference: starts after the evaluator is healthy")
    for name in set(SERVICES) - {"evaluator", "inference"}:
        c.expect(services[name].get("command") == base["services"][name].get("command"),
                 f"compose+gate/{name}: the override changes its command")


def check_pair(c, config, base, used_flags):
    """The two-inference-server override: inference runs two replicas under its one name (the
    actors' --inference and Prometheus find both through DNS); nothing else changes."""
    services = config["services"]
    check_fleet(c, "compose+inference-pair", config, False, used_flags)
    replicas = services.get("inference", {}).get("deploy", {}).get("replicas")
    c.expect(replicas == 2, f"compose+inference-pair/inference: 2 replicas, got {replicas}")
    for name in SERVICES:
        c.expect(services.get(name, {}).get("command") == base["services"][name].get("command"),
                 f"compose+inference-pair/{name}: the override changes the command line")
    for name in set(SERVICES) - {"inference"}:
        c.expect(services.get(name, {}).get("deploy") == base["services"][name].get("deploy"),
                 f"compose+inference-pair/{name}: the override changes more than inference")


def check_prometheus_targets(c):
    """The compose scrape config names the compose services on their metrics ports; scaled ones
    are found through DNS."""
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    expected = {}
    for name, component in SERVICES.items():
        if name not in SCALED:
            expected.setdefault(f"zf-{component}", set()).add(
                f"{name}:{COMPONENTS[component]['metrics']}")
    for job, targets in expected.items():
        got = {t for s in jobs.get(job, {}).get("static_configs", []) for t in s["targets"]}
        c.expect(got == targets, f"prometheus.yml: job {job} scrapes {sorted(got)}, "
                 f"expected {sorted(targets)}")
    for name in sorted(SCALED):
        dns = jobs.get(f"zf-{name}", {}).get("dns_sd_configs", [{}])[0]
        c.expect(dns.get("names") == [name] and dns.get("port") == COMPONENTS[name]["metrics"]
                 and not jobs.get(f"zf-{name}", {}).get("static_configs"),
                 f"prometheus.yml: {name} replicas found through DNS on their metrics port")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docker-compose", default="docker-compose")
    parser.add_argument("--zf", help="the zf binary, to check the flags deploy/ passes")
    args = parser.parse_args()
    tool = shutil.which(args.docker_compose)
    if tool is None:
        print("SKIP: docker-compose not found (scripts/bootstrap installs Debian's "
              "docker-compose 1.29)")
        return SKIP
    c = Checker()
    used_flags = {}
    configs = {}
    for label, files, gpu in (("compose", [BASE], False), ("compose+gpu", [BASE, GPU], True)):
        try:
            config = compose_config(tool, files)
        except RuntimeError as error:
            c.expect(False, str(error))
            continue
        check_fleet(c, label, config, gpu, used_flags)
        configs[label] = config
    try:
        check_tls(c, compose_config(tool, [BASE, TLS]), configs.get("compose"))
        if "compose" in configs:
            check_gate(c, compose_config(tool, [BASE, GATE]), configs["compose"], used_flags)
            compose_config(tool, [BASE, GATE, TLS])  # the two overrides together resolve
            check_pair(c, compose_config(tool, [BASE, PAIR]), configs["compose"], used_flags)
            # With the GPU override too: every replica reserves a GPU.
            both = compose_config(tool, [BASE, PAIR, GPU])
            check_fleet(c, "compose+inference-pair+gpu", both, True, used_flags)
            c.expect(both["services"]["inference"]["deploy"].get("replicas") == 2,
                     "compose+inference-pair+gpu/inference: 2 replicas")
    except RuntimeError as error:
        c.expect(False, str(error))
    check_prometheus_targets(c)
    if args.zf:
        if pathlib.Path(args.zf).exists():
            check_against_binary(c, args.zf, used_flags)
        else:
            print(f"note: {args.zf} is not built; flags checked against fleet_spec.py only")
    return c.finish("docker-compose files")


if __name__ == "__main__":
    sys.exit(main())
