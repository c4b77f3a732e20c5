#!/usr/bin/env python3
"""Static checks of deploy/docker (no Docker daemon needed): both Dockerfiles are multi-stage,
build `zf` in the first stage and copy only it (and libraries) into the runtime stage, run as the
user the Kubernetes manifests expect (runAsUser/fsGroup 10001), expose every port of
fleet_spec.py, and use `zf` as the entry point; .dockerignore keeps build trees out of the
context; the images the compose and Kubernetes files name are the tags the docs build.

    deploy/tests/check_docker.py

Exit 0: all checks passed; 1: a check failed.
"""
import pathlib
import re
import sys

import yaml

from fleet_spec import COMPONENTS, GATE_GRPC, Checker

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCKER = ROOT / "deploy" / "docker"
USER_ID = "10001"


def instructions(path):
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text())
    result = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        result.append((word.upper(), rest.strip()))
    return result


def check_dockerfile(c, name, base_pattern):
    path = DOCKER / name
    steps = instructions(path)
    stages = [rest for word, rest in steps if word == "FROM"]
    c.expect(len(stages) == 2, f"{name}: two stages (build, runtime), got {stages}")
    if len(stages) != 2:
        return
    c.expect(stages[0].endswith("AS build") and stages[1].endswith("AS runtime"),
             f"{name}: stages named build and runtime")
    c.expect(re.search(base_pattern, stages[1]) is not None,
             f"{name}: runtime base {stages[1]!r} should match {base_pattern!r}")
    runtime_start = max(i for i, (w, _) in enumerate(steps) if w == "FROM")
    build, runtime = steps[:runtime_start], steps[runtime_start:]
    c.expect(any(w == "RUN" and "scripts/bootstrap" in r for w, r in build),
             f"{name}: the build stage installs with scripts/bootstrap")
    c.expect(any(w == "RUN" and "--target zf" in r for w, r in build),
             f"{name}: the build stage builds the zf target")
    copies = [r for w, r in runtime if w == "COPY"]
    c.expect(any("--from=build /build/cli/zf /usr/local/bin/zf" in r for r in copies),
             f"{name}: the runtime stage copies zf from the build stage")
    c.expect(all("--from=build" in r for r in copies),
             f"{name}: the runtime stage copies only from the build stage (no sources)")
    c.expect(not any(w == "RUN" and re.search(r"\b(cmake|bootstrap|-dev\b)", r)
                     for w, r in runtime),
             f"{name}: no build tools or -dev packages in the runtime stage")
    c.expect(("USER", "zerofleet") in runtime, f"{name}: runs as user zerofleet")
    c.expect(any(w == "RUN" and f"--uid {USER_ID}" in r for w, r in runtime),
             f"{name}: user zerofleet has uid {USER_ID}")
    exposed = {int(p) for w, r in runtime if w == "EXPOSE" for p in r.split()}
    ports = {spec[k] for spec in COMPONENTS.values() for k in ("grpc", "metrics") if spec[k]}
    ports.add(GATE_GRPC)
    c.expect(exposed == ports, f"{name}: EXPOSE {sorted(exposed)} != {sorted(ports)}")
    c.expect(("ENTRYPOINT", '["/usr/local/bin/zf"]') in runtime, f"{name}: zf is the entry point")


def check_users_match(c):
    """The Kubernetes pods run as the image's user so they can write /data."""
    for manifest in sorted((ROOT / "deploy/k8s/base").glob("*.yaml")):
        for doc in yaml.safe_load_all(manifest.read_text()):
            if not doc or doc.get("kind") not in ("Deployment", "StatefulSet"):
                continue
            context = doc["spec"]["template"]["spec"].get("securityContext", {})
            c.expect(str(context.get("runAsUser")) == USER_ID,
                     f"{manifest.name}/{doc['metadata']['name']}: runAsUser {USER_ID}")
            if doc["kind"] == "StatefulSet":
                c.expect(str(context.get("fsGroup")) == USER_ID,
                         f"{manifest.name}/{doc['metadata']['name']}: fsGroup {USER_ID}")


def main():
    c = Checker()
    check_dockerfile(c, "Dockerfile", r"^\$\{DEBIAN_IMAGE\}|^debian:12")
    check_dockerfile(c, "Dockerfile.cuda", r"^nvidia/cuda:\$\{CUDA_VERSION\}-runtime-")
    c.expect("ARG DEBIAN_IMAGE=debian:12" in (DOCKER / "Dockerfile").read_text(),
             "Dockerfile: Debian 12 base")
    ignore = (ROOT / ".dockerignore").read_text().split()
    for pattern in ("build*/", ".git/", "runs/"):
        c.expect(pattern in ignore, f".dockerignore: {pattern}")
    check_users_match(c)
    return c.finish("deploy/docker")


if __name__ == "__main__":
    sys.exit(main())
