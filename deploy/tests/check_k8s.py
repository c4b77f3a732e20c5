#!/usr/bin/env python3
"""Renders every kustomize overlay of deploy/k8s with `kubectl kustomize` and checks the objects:
container ports and flags agree with fleet_spec.py (and with the `zf` binary when --zf is given),
gRPC probes on every server, resources, volumes, labels and selectors, grace periods, images
(zerofleet:cuda only on GPUs, zerofleet:actor for actors, zerofleet:cpu otherwise), the run
ConfigMap, the HPA and the disruption budgets, and the inference servers behind a headless Service
(two replicas in the gpu overlay).

    deploy/tests/check_k8s.py [--zf build/cli/zf] [--kubectl kubectl]

Exit 0: all checks passed; 1: a check failed; 77: kubectl is missing or too old (ctest: skipped).
"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys

import yaml

from fleet_spec import (COMPONENTS, GATE_GRPC, GRACE_MARGIN_S, Checker, check_against_binary,
                        parse_flags, port_of)

K8S = pathlib.Path(__file__).resolve().parents[1] / "k8s"
OVERLAYS = ["cpu", "gpu", "cpu-tls", "cpu-gate"]
TLS_OVERLAYS = {"cpu-tls"}  # components/tls: mutual TLS, probes run `zf health` over it
GATE_OVERLAYS = {"cpu-gate"}  # components/gate: the evaluator serves the accepted versions
SKIP = 77
WORKLOAD_KINDS = {"inference": "Deployment", "replay": "StatefulSet", "learner": "StatefulSet",
                  "actor": "Deployment", "evaluator": "StatefulSet"}
STATEFUL = {"replay", "learner", "evaluator"}  # keep state on a volume mounted at /data
# The CPU image of each component where it is not zerofleet:cpu: actors run deploy/docker/
# Dockerfile's actor stage (zf without LibTorch), also in the gpu overlay.
IMAGES = {"actor": "zerofleet:actor"}


def render(kubectl, overlay):
    result = subprocess.run([kubectl, "kustomize", str(K8S / "overlays" / overlay)],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"kubectl kustomize overlays/{overlay} failed:\n{result.stderr}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def index(objects):
    by_kind = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], {})[obj["metadata"]["name"]] = obj
    return by_kind


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def expand(value, env):
    """Expands Kubernetes $(VAR) references; unknown names stay as they are."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)),
                  value)


def check_probe(c, where, probe, port, kind="grpc"):
    if not c.expect(probe is not None, f"{where}: missing"):
        return
    if kind == "exec":
        c.expect("grpc" not in probe and probe.get("exec", {}).get("command", [])[:3] ==
                 ["zf", "health", f"--target=localhost:{port}"],
                 f"{where}: expected `zf health --target=localhost:{port}` (kubelet's gRPC probe "
                 f"has no client certificate), got {probe}")
    elif kind == "grpc":
        c.expect(probe.get("grpc", {}).get("port") == port,
                 f"{where}: expected a grpc probe on port {port}, got {probe}")
    else:
        c.expect("httpGet" in probe, f"{where}: expected an httpGet probe, got {probe}")


def check_overlay(c, overlay, objects, used_flags):
    kinds = index(objects)
    c.expect(all(o["metadata"].get("namespace") == "zerofleet" for o in objects
                 if o["kind"] != "Namespace"), f"{overlay}: every object is in namespace zerofleet")
    configmaps = kinds.get("ConfigMap", {})
    services = kinds.get("Service", {})
    pods = {}  # component -> (workload, pod template)
    gated = overlay in GATE_OVERLAYS
    for component, spec in COMPONENTS.items():
        name = f"zf-{component}"
        kind = WORKLOAD_KINDS[component]
        workload = kinds.get(kind, {}).get(name)
        where = f"{overlay}/{kind}/{name}"
        if not c.expect(workload is not None, f"{where}: missing"):
            continue
        template = workload["spec"]["template"]
        labels = template["metadata"].get("labels", {})
        pods[component] = (workload, template)
        c.expect(labels.get("app.kubernetes.io/component") == component,
                 f"{where}: pod label app.kubernetes.io/component={component}")
        c.expect(selects(workload["spec"]["selector"].get("matchLabels"), labels),
                 f"{where}: selector {workload['spec']['selector']} does not match pod labels")
        for key in ("app.kubernetes.io/name", "app.kubernetes.io/component",
                    "app.kubernetes.io/part-of"):
            c.expect(key in workload["metadata"].get("labels", {}), f"{where}: label {key}")

        annotations = template["metadata"].get("annotations", {})
        c.expect(annotations.get("prometheus.io/scrape") == "true",
                 f"{where}: prometheus.io/scrape annotation")
        c.expect(annotations.get("prometheus.io/port") == str(spec["metrics"]),
                 f"{where}: prometheus.io/port is {spec['metrics']}")
        c.expect(annotations.get("prometheus.io/path") == "/metrics",
                 f"{where}: prometheus.io/path is /metrics")

        pod = template["spec"]
        grace = pod.get("terminationGracePeriodSeconds", 30)
        c.expect(grace >= spec["drain_s"] + GRACE_MARGIN_S,
                 f"{where}: terminationGracePeriodSeconds {grace} < drain {spec['drain_s']}s "
                 f"+ {GRACE_MARGIN_S}s")
        containers = pod["containers"]
        if not c.expect(len(containers) == 1, f"{where}: one container"):
            continue
        container = containers[0]
        c.expect(container.get("image", "").startswith("zerofleet:"), f"{where}: image")

        # The run configuration: $(VAR) in args must come from the ConfigMap it loads.
        env = {e["name"]: e.get("value", "") for e in container.get("env", [])}
        for source in container.get("envFrom", []):
            cm_name = source.get("configMapRef", {}).get("name")
            cm = configmaps.get(cm_name)
            if c.expect(cm is not None, f"{where}: envFrom ConfigMap {cm_name} not rendered"):
                env.update(cm.get("data", {}))
        args = [expand(a, env) for a in container.get("args", [])]
        unresolved = [a for a in args if "$(" in a]
        c.expect(not unresolved, f"{where}: args reference undefined variables: {unresolved}")
        try:
            command, flags = parse_flags(args)
        except (ValueError, IndexError) as error:
            c.expect(False, f"{where}: args {args}: {error}")
            continue
        used_flags.setdefault(component, set()).update(flags)
        c.expect(command == component, f"{where}: runs `zf {command}`, expected `zf {component}`")
        c.expect(not set(flags) - spec["flags"],
                 f"{where}: unknown flags {sorted(set(flags) - spec['flags'])}")
        c.expect(not spec["required"] - set(flags),
                 f"{where}: missing flags {sorted(spec['required'] - set(flags))}")
        c.expect(all(v != "" for v in flags.values()), f"{where}: a flag has an empty value")

        ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
        c.expect(ports.get("metrics") == spec["metrics"], f"{where}: containerPort metrics")
        if "metrics_listen" in flags:
            c.expect(port_of(flags["metrics_listen"]) == spec["metrics"],
                     f"{where}: --metrics_listen port is {spec['metrics']}")
        if component == "evaluator":
            gate = {k: flags.get(k) for k in ("gate", "gate_listen")}
            c.expect(gate == ({"gate": "true", "gate_listen": f"0.0.0.0:{GATE_GRPC}"} if gated
                              else {"gate": None, "gate_listen": None}),
                     f"{where}: gate flags {gate} ({'gated' if gated else 'not gated'})")
            c.expect(flags.get("model_service") == f"zf-learner:{COMPONENTS['learner']['grpc']}",
                     f"{where}: --model_service names the learner Service")
        if component == "evaluator" and gated:
            c.expect(ports == {"metrics": spec["metrics"], "grpc": GATE_GRPC},
                     f"{where}: containerPorts metrics and grpc {GATE_GRPC}, got {ports}")
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                check_probe(c, f"{where}: {probe}", container.get(probe), GATE_GRPC, kind="exec")
        elif spec["grpc"] is not None:
            c.expect(ports.get("grpc") == spec["grpc"], f"{where}: containerPort grpc")
            if "listen" in flags:
                c.expect(port_of(flags["listen"]) == spec["grpc"],
                         f"{where}: --listen port is {spec['grpc']}")
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                check_probe(c, f"{where}: {probe}", container.get(probe), spec["grpc"],
                            kind="exec" if overlay in TLS_OVERLAYS else "grpc")
        else:
            c.expect(set(ports) == {"metrics"}, f"{where}: serves only metrics")
            check_probe(c, f"{where}: livenessProbe", container.get("livenessProbe"), None,
                        kind="http")

        resources = container.get("resources", {})
        requests, limits = resources.get("requests", {}), resources.get("limits", {})
        c.expect("cpu" in requests and "memory" in requests, f"{where}: cpu and memory requests")
        c.expect("memory" in limits, f"{where}: memory limit")
        wants_gpu = overlay == "gpu" and component in ("inference", "learner")
        c.expect(("nvidia.com/gpu" in limits) == wants_gpu,
                 f"{where}: nvidia.com/gpu limit {'expected' if wants_gpu else 'unexpected'}")
        if wants_gpu:
            c.expect(container["image"].endswith(":cuda"), f"{where}: CUDA image on a GPU")
            c.expect(any(t.get("key") == "nvidia.com/gpu" for t in pod.get("tolerations", [])),
                     f"{where}: tolerates the nvidia.com/gpu taint")
        else:
            image = IMAGES.get(component, "zerofleet:cpu")
            c.expect(container["image"] == image,
                     f"{where}: image {container['image']}, expected {image}")

        mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
        if overlay in TLS_OVERLAYS:
            c.expect(mounts.pop("tls", None) == "/certs", f"{where}: Secret mounted at /certs")
            volumes = {v["name"]: v for v in pod.get("volumes", [])}
            c.expect(volumes.get("tls", {}).get("secret", {}).get("secretName") ==
                     f"zf-tls-{component}", f"{where}: volume tls is Secret zf-tls-{component}")
            tls_env = {e["name"]: e.get("value") for e in container.get("env", [])
                       if e["name"].startswith("ZF_TLS_")}
            c.expect(tls_env == {"ZF_TLS_CERT": "/certs/tls.pem", "ZF_TLS_KEY": "/certs/tls.key",
                                 "ZF_TLS_CA": "/certs/ca.pem", "ZF_TLS_CLIENT_CA": "/certs/ca.pem"},
                     f"{where}: ZF_TLS_* variables name the mounted Secret, got {tls_env}")
        if component in STATEFUL:
            claims = [t["metadata"]["name"] for t in workload["spec"].get("volumeClaimTemplates", [])]
            c.expect(claims == ["data"], f"{where}: one volumeClaimTemplate 'data'")
            c.expect(mounts.get("data") == "/data", f"{where}: data volume mounted at /data")
            c.expect(flags.get("dir", "").startswith("/data/"), f"{where}: --dir under /data")
            service = services.get(workload["spec"].get("serviceName"))
            if c.expect(service is not None, f"{where}: serviceName names a Service"):
                c.expect(service["spec"].get("clusterIP") == "None",
                         f"{where}: its Service is headless")
        else:
            c.expect(not mounts, f"{where}: stateless, no volumes")

        # Services: select this component's pods and point at its named ports.
        service = services.get(name)
        if spec["grpc"] is None and component not in STATEFUL:
            c.expect(service is None, f"{where}: actors need no Service")
            continue
        if not c.expect(service is not None, f"{overlay}/Service/{name}: missing"):
            continue
        c.expect(selects(service["spec"].get("selector"), labels),
                 f"{overlay}/Service/{name}: selector does not match the pods")
        service_ports = {p["name"]: p for p in service["spec"]["ports"]}
        expected_ports = {"metrics": spec["metrics"]}
        if spec["grpc"] is not None:
            expected_ports["grpc"] = spec["grpc"]
        elif component == "evaluator" and gated:
            expected_ports["grpc"] = GATE_GRPC
        c.expect(set(service_ports) == set(expected_ports),
                 f"{overlay}/Service/{name}: ports {sorted(service_ports)}, expected "
                 f"{sorted(expected_ports)}")
        for port_name, number in expected_ports.items():
            p = service_ports.get(port_name, {})
            c.expect(p.get("port") == number and p.get("targetPort") == port_name,
                     f"{overlay}/Service/{name}: port {port_name} {number} -> {port_name}")

    # Addresses between components.
    if {"replay", "learner", "actor", "inference"} <= pods.keys():
        replay = pods["replay"][0]
        shards = [f"zf-replay-{i}.zf-replay:{COMPONENTS['replay']['grpc']}"
                  for i in range(replay["spec"]["replicas"])]
        c.expect(len(shards) >= 2, f"{overlay}: at least two replay shards")
        for component in ("learner", "actor"):
            container = pods[component][1]["spec"]["containers"][0]
            env = dict(configmaps.get(container["envFrom"][0]["configMapRef"]["name"], {})
                       .get("data", {}))
            _, flags = parse_flags([expand(a, env) for a in container["args"]])
            c.expect(flags.get("replay", "").split(",") == shards,
                     f"{overlay}/{component}: --replay {flags.get('replay')} != {shards}")
            if component == "actor":
                c.expect(flags.get("inference") ==
                         f"zf-inference:{COMPONENTS['inference']['grpc']}",
                         f"{overlay}/actor: --inference names the inference Service")
        # The actors resolve the inference Service to every server: it must be headless.
        c.expect(services.get("zf-inference", {}).get("spec", {}).get("clusterIP") == "None",
                 f"{overlay}/Service/zf-inference: headless (clusterIP: None), so actors "
                 f"resolve every inference pod")
        replicas = pods["inference"][0]["spec"].get("replicas", 1)
        want = 2 if overlay == "gpu" else 1
        c.expect(replicas == want, f"{overlay}/inference: {want} replicas, got {replicas}")
        inference = pods["inference"][1]["spec"]["containers"][0]
        _, flags = parse_flags([a for a in inference["args"] if "$(" not in a])
        source = (f"zf-evaluator:{GATE_GRPC}" if gated
                  else f"zf-learner:{COMPONENTS['learner']['grpc']}")
        c.expect(flags.get("model_service") == source,
                 f"{overlay}/inference: --model_service is {source}, got "
                 f"{flags.get('model_service')}")

    # Every setting of the run ConfigMap is used by some container (no dead configuration).
    referenced = set()
    for _, template in pods.values():
        for container in template["spec"]["containers"]:
            for arg in container.get("args", []):
                referenced |= set(re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", arg))
    run_configs = [cm for name, cm in configmaps.items() if name.startswith("zf-run-config")]
    if c.expect(len(run_configs) == 1, f"{overlay}: one zf-run-config ConfigMap"):
        unused = set(run_configs[0].get("data", {})) - referenced
        c.expect(not unused, f"{overlay}: zf-run-config keys no container uses: {sorted(unused)}")

    # The actors' autoscaler and the disruption budgets.
    hpa = kinds.get("HorizontalPodAutoscaler", {}).get("zf-actor")
    if c.expect(hpa is not None, f"{overlay}: HPA zf-actor"):
        target = hpa["spec"]["scaleTargetRef"]
        c.expect(target["kind"] == "Deployment" and target["name"] == "zf-actor",
                 f"{overlay}: HPA scales Deployment zf-actor")
        c.expect(1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"],
                 f"{overlay}: HPA replica bounds")
    budgets = kinds.get("PodDisruptionBudget", {})
    for component, (workload, template) in pods.items():
        matching = [n for n, b in budgets.items()
                    if selects(b["spec"]["selector"]["matchLabels"],
                               template["metadata"]["labels"])]
        c.expect(len(matching) == 1, f"{overlay}: one PodDisruptionBudget for {component}, "
                 f"got {matching}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubectl", default="kubectl")
    parser.add_argument("--zf", help="the zf binary, to check the flags deploy/ passes")
    args = parser.parse_args()
    kubectl = shutil.which(args.kubectl)
    if kubectl is None:
        print("SKIP: kubectl not found. Debian 12's kubernetes-client (1.20) embeds kustomize "
              "v2.0.3, too old for these kustomizations; install kubectl >= 1.21 from "
              "pkgs.k8s.io (see docs/operations.md).")
        return SKIP
    version = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True)
    match = re.search(r"Kustomize Version: v(\d+)", version.stdout)
    if not match or int(match.group(1)) < 4:
        print(f"SKIP: {kubectl} embeds kustomize older than v4 ({version.stdout.strip()}); "
              "install kubectl >= 1.21 (docs/operations.md).")
        return SKIP
    c = Checker()
    used_flags = {}
    for overlay in OVERLAYS:
        try:
            objects = render(kubectl, overlay)
        except RuntimeError as error:
            c.expect(False, str(error))
            continue
        check_overlay(c, overlay, objects, used_flags)
    if args.zf:
        if pathlib.Path(args.zf).exists():
            check_against_binary(c, args.zf, used_flags)
        else:
            print(f"note: {args.zf} is not built; flags checked against fleet_spec.py only")
    return c.finish(f"kustomize overlays {OVERLAYS}")


if __name__ == "__main__":
    sys.exit(main())
