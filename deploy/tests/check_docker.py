#!/usr/bin/env python3
"""Static checks of deploy/docker (no Docker daemon needed).

Dockerfile has three stages: `build` builds both binaries (`zf`, and `zf-torch`, the one with
LibTorch to which `zf` hands the commands that run a network) and lists each one's Debian
packages; `actor` installs only the packages of `zf` (no LibTorch, no OpenBLAS) and copies `zf`
alone, never `zf-torch`; `runtime`, the last (so the default target), copies both. Dockerfile.cuda
has `build` and `runtime`, whose runtime copies both binaries. Every image stage copies only from
the build stage, runs as the user the Kubernetes manifests expect (runAsUser/fsGroup 10001),
exposes the ports of fleet_spec.py its roles use, and has `zf` as the entry point.
Dockerfile.prometheus is Debian's Prometheus with prom/prometheus's entry point. .dockerignore
keeps build trees out of the context. The images the compose and Kubernetes files name are tags
that docs/operations.md builds (`docker build -f FILE [--target STAGE] -t TAG`), every
documented build of a tag builds the same stage, and every workload's image holds the binary its
command needs (a network command needs `zf-torch`, which the actor image lacks).

    deploy/tests/check_docker.py

Exit 0: all checks passed; 1: a check failed.
"""
import pathlib
import re
import shlex
import sys

import yaml

from fleet_spec import COMPONENTS, GATE_GRPC, Checker

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCKER = ROOT / "deploy" / "docker"
OPERATIONS = ROOT / "docs" / "operations.md"
USER_ID = "10001"
ALL_PORTS = ({spec[k] for spec in COMPONENTS.values() for k in ("grpc", "metrics") if spec[k]}
             | {GATE_GRPC})
ACTOR_PORTS = {p for p in (COMPONENTS["actor"]["grpc"], COMPONENTS["actor"]["metrics"]) if p}
BOTH = {"zf", "zf-torch"}
# What each Dockerfile must hold: its stages in order, and for each image stage the binaries it
# copies to /usr/local/bin, the ports it exposes, the package list it installs (None: none, as
# in the CUDA image, which copies libraries instead) and packages it must (not) install.
DOCKERFILES = {
    "Dockerfile": {
        "base": r"^\$\{DEBIAN_IMAGE\}|^debian:12",
        "stages": {
            "actor": {"binaries": {"zf"}, "ports": ACTOR_PORTS,
                      "list": "runtime-packages-actor.txt", "extra": set(),
                      "forbidden": {"libopenblas", "libtorch", "runtime-packages.txt"}},
            "runtime": {"binaries": BOTH, "ports": ALL_PORTS, "list": "runtime-packages.txt",
                        "extra": {"libopenblas0-pthread"}, "forbidden": set()},
        },
    },
    "Dockerfile.cuda": {
        "base": r"^nvidia/cuda:\$\{CUDA_VERSION\}-runtime-",
        "stages": {
            "runtime": {"binaries": BOTH, "ports": ALL_PORTS, "list": None, "extra": set(),
                        "forbidden": set()},
        },
    },
}
# The tag each image is built as: (Dockerfile, stage).
TAGS = {"zerofleet:cpu": ("Dockerfile", "runtime"), "zerofleet:actor": ("Dockerfile", "actor"),
        "zerofleet:cuda": ("Dockerfile.cuda", "runtime")}


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


def split_stages(steps):
    """[(stage name, base image, steps)] of a multi-stage Dockerfile (ARGs before FROM dropped)."""
    stages = []
    for word, rest in steps:
        if word == "FROM":
            match = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", rest, re.IGNORECASE)
            base, name = (match.group(1), match.group(2)) if match else (rest, None)
            stages.append((name, base, []))
        elif stages:
            stages[-1][2].append((word, rest))
    return stages


def build_targets(run):
    """The targets of `cmake --build DIR --target A B ...` in a RUN, or None."""
    tokens = run.split()
    for i, token in enumerate(tokens):
        if token == "--target" and "--build" in tokens[:i]:
            targets = []
            for t in tokens[i + 1:]:
                if t.startswith("-") or t == "&&":
                    break
                targets.append(t)
            return set(targets)
    return None


def check_build_stage(c, name, steps, cuda):
    runs = [r for w, r in steps if w == "RUN"]
    c.expect(any("scripts/bootstrap" in r for r in runs),
             f"{name}: the build stage installs with scripts/bootstrap")
    targets = set().union(*(build_targets(r) or set() for r in runs))
    c.expect(BOTH <= targets, f"{name}: the build stage builds the zf and zf-torch targets, "
             f"got {sorted(targets)}")
    text = " ".join(runs)
    if cuda:
        c.expect(re.search(r"\bldd /build/cli/zf /build/cli/zf-torch\b", text) is not None,
                 f"{name}: the libraries copied are those of zf and zf-torch (ldd both)")
    else:
        c.expect(re.search(r"runtime-packages\.sh /build/cli/zf > /runtime-packages-actor\.txt",
                           text) is not None,
                 f"{name}: zf's packages listed into /runtime-packages-actor.txt")
        c.expect(re.search(r"runtime-packages\.sh /build/cli/zf-torch\b[^&]*> "
                           r"/runtime-packages\.txt", text) is not None,
                 f"{name}: zf-torch's packages listed into /runtime-packages.txt")


def check_image_stage(c, name, stage, base, steps, spec, base_pattern):
    where = f"{name}/{stage}"
    c.expect(re.search(base_pattern, base) is not None,
             f"{where}: base {base!r} should match {base_pattern!r}")
    copies = [r for w, r in steps if w == "COPY"]
    c.expect(all("--from=build" in r for r in copies),
             f"{where}: copies only from the build stage (no sources)")
    binaries = {}
    for r in copies:
        match = re.search(r"--from=build /build/cli/(\S+) /usr/local/bin/(\S+)$", r)
        if match:
            binaries[match.group(1)] = match.group(2)
    c.expect(all(src == dst for src, dst in binaries.items()),
             f"{where}: binaries keep their names in /usr/local/bin ({binaries}): zf finds "
             "zf-torch beside itself")
    c.expect(set(binaries) == spec["binaries"],
             f"{where}: copies {sorted(spec['binaries'])} to /usr/local/bin, got "
             f"{sorted(binaries)}")
    if "zf-torch" not in spec["binaries"]:
        c.expect(not any("zf-torch" in r for _, r in steps),
                 f"{where}: nothing of zf-torch (the binary with LibTorch)")
    runs = [r for w, r in steps if w == "RUN"]
    c.expect(not any(re.search(r"\b(cmake|bootstrap|-dev\b)", r) for r in runs),
             f"{where}: no build tools or -dev packages")
    installs = [r for r in runs if "apt-get install" in r]
    if spec["list"] is not None:
        listed = f"/tmp/{spec['list']}"
        c.expect(any(f"--from=build /{spec['list']} {listed}" in r for r in copies),
                 f"{where}: copies /{spec['list']} from the build stage")
        c.expect(len(installs) == 1 and f"$(cat {listed})" in installs[0],
                 f"{where}: one apt-get install, of the packages in {spec['list']}")
        for package in spec["extra"]:
            c.expect(any(re.search(rf"\b{re.escape(package)}\b", r) for r in installs),
                     f"{where}: installs {package}")
    else:
        c.expect(not installs, f"{where}: installs no packages (libraries are copied)")
    for word in spec["forbidden"]:
        c.expect(not any(word in r for _, r in steps), f"{where}: nothing of {word}")
    c.expect(("USER", "zerofleet") in steps, f"{where}: runs as user zerofleet")
    c.expect(any(w == "RUN" and f"--uid {USER_ID}" in r for w, r in steps),
             f"{where}: user zerofleet has uid {USER_ID}")
    c.expect(any(w == "RUN" and "mkdir -p /data" in r and "chown zerofleet /data" in r
                 for w, r in steps), f"{where}: /data belongs to zerofleet")
    exposed = {int(p) for w, r in steps if w == "EXPOSE" for p in r.split()}
    c.expect(exposed == spec["ports"],
             f"{where}: EXPOSE {sorted(exposed)} != {sorted(spec['ports'])}")
    c.expect(("ENTRYPOINT", '["/usr/local/bin/zf"]') in steps, f"{where}: zf is the entry point")


def check_dockerfile(c, name):
    """Returns {stage: binaries it copies} for the image checks."""
    want = DOCKERFILES[name]
    stages = split_stages(instructions(DOCKER / name))
    names = [s[0] for s in stages]
    expected = ["build"] + list(want["stages"])
    c.expect(names == expected, f"{name}: stages {expected}, got {names}")
    by_name = {s[0]: s for s in stages}
    if "build" in by_name:
        check_build_stage(c, name, by_name["build"][2], cuda=name.endswith(".cuda"))
    for stage, spec in want["stages"].items():
        if stage in by_name:
            _, base, steps = by_name[stage]
            check_image_stage(c, name, stage, base, steps, spec, want["base"])
    return {stage: spec["binaries"] for stage, spec in want["stages"].items()}, names


def documented_builds(path):
    """[(tag, Dockerfile name, target or None)] of the `docker build` commands in a file's text,
    comment markers dropped and continuation lines joined."""
    lines = [re.sub(r"^\s*#", "", line) for line in path.read_text().splitlines()]
    text = re.sub(r"\\\n", " ", "\n".join(lines))
    builds = []
    for match in re.finditer(r"docker build ([^\n`]*)", text):
        try:
            words = shlex.split(match.group(1), comments=True)
        except ValueError:
            continue
        names = {"-f": "file", "--file": "file", "-t": "tag", "--tag": "tag",
                 "--target": "target", "--build-arg": "build-arg"}
        options, i = {}, 0
        while i < len(words):
            if words[i] in names and i + 1 < len(words):
                options[names[words[i]]] = words[i + 1]
                i += 2
            else:
                i += 1
        if "tag" in options:
            builds.append((options["tag"],
                           pathlib.PurePath(options.get("file", "Dockerfile")).name,
                           options.get("target")))
    return builds


def check_documented_builds(c, stage_names):
    """Every `docker build` in the docs and the deploy files' headers builds a stage that exists,
    the same one for a tag wherever it is written; docs/operations.md builds every image."""
    sources = [OPERATIONS, *sorted(DOCKER.glob("Dockerfile*")),
               *sorted((ROOT / "deploy/compose").glob("*.yml")),
               *sorted((ROOT / "deploy/k8s").rglob("*.yaml"))]
    built = {}  # tag -> {(file, stage): [where]}
    for source in sources:
        for tag, dockerfile, target in documented_builds(source):
            names = stage_names.get(dockerfile)
            where = source.relative_to(ROOT)
            if not c.expect(names is not None, f"{where}: builds {tag} from unknown {dockerfile}"):
                continue
            stage = target if target is not None else names[-1]
            c.expect(stage in names, f"{where}: builds {tag} from stage {stage} that "
                     f"{dockerfile} does not have")
            built.setdefault(tag, {}).setdefault((dockerfile, stage), []).append(str(where))
    for tag, ways in built.items():
        c.expect(len(ways) == 1, f"{tag} is built as different stages: {ways}")
    operations = {tag for tag, _, _ in documented_builds(OPERATIONS)}
    for tag, (dockerfile, stage) in TAGS.items():
        c.expect(tag in operations, f"docs/operations.md: builds {tag}")
        c.expect(set(built.get(tag, {})) <= {(dockerfile, stage)},
                 f"{tag}: built from {sorted(built.get(tag, {}))}, expected {dockerfile} "
                 f"stage {stage}")
    return built


def network_commands():
    """kNetworkCommandNames of cli/command.h: the commands only zf-torch runs."""
    text = (ROOT / "cli" / "command.h").read_text()
    match = re.search(r"kNetworkCommandNames\s*=\s*\{([^}]*)\}", text)
    return set(re.findall(r'"([^"]+)"', match.group(1))) if match else set()


def default_image(value):
    """${VAR:-default} -> default (what the files resolve to with no ZF_* set)."""
    return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}", r"\1", str(value))


def workload_images():
    """[(where, image, command)] of every compose service and Kubernetes container that names a
    zerofleet image; an override without a command takes the base file's."""
    result = []
    compose = ROOT / "deploy" / "compose"
    base = yaml.safe_load((compose / "docker-compose.yml").read_text())["services"]
    for path in sorted(compose.glob("docker-compose*.yml")):
        for name, service in (yaml.safe_load(path.read_text()).get("services") or {}).items():
            if not isinstance(service, dict) or "image" not in service:
                continue
            command = service.get("command") or base.get(name, {}).get("command") or [None]
            result.append((f"{path.name}/{name}", default_image(service["image"]), command[0]))
    k8s = ROOT / "deploy" / "k8s"
    base_args = {}
    paths = sorted(k8s.rglob("*.yaml"), key=lambda p: (p.parts[-2] != "base", str(p)))
    for path in paths:
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") not in ("Deployment", "StatefulSet"):
                continue
            for container in doc["spec"]["template"]["spec"].get("containers", []):
                key = (doc["kind"], doc["metadata"]["name"], container["name"])
                if container.get("args"):
                    base_args.setdefault(key, container["args"])
                if "image" in container:
                    args = container.get("args") or base_args.get(key) or [None]
                    result.append((f"{path.relative_to(k8s)}/{key[1]}", container["image"],
                                   args[0]))
    return [(w, i, cmd) for w, i, cmd in result if i.startswith("zerofleet")]


def check_images(c, built, binaries):
    """Compose and Kubernetes name only documented tags; actors run zerofleet:actor; an image
    holds zf-torch wherever its workload runs a network."""
    network = network_commands()
    c.expect({"inference", "learner", "evaluator"} <= network,
             f"cli/command.h: kNetworkCommandNames {sorted(network)}")
    used = workload_images()
    for where, image, command in used:
        c.expect(image in built, f"{where}: image {image} is not a tag the docs build "
                 f"({sorted(built)})")
        stages = built.get(image, {})
        has = set().union(*(binaries.get(dockerfile, {}).get(stage, set())
                            for dockerfile, stage in stages))
        needs = {"zf", "zf-torch"} if command in network else {"zf"}
        c.expect(needs <= has, f"{where}: `zf {command}` needs {sorted(needs)}, image {image} "
                 f"holds {sorted(has)}")
        if command == "actor":
            c.expect(image == "zerofleet:actor",
                     f"{where}: actors run zerofleet:actor, got {image}")
    images = {image for _, image, _ in used}
    c.expect(set(TAGS) <= images, f"compose and k8s use {sorted(TAGS)}, got {sorted(images)}")


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


def check_prometheus_dockerfile(c):
    """Dockerfile.prometheus: one stage on the Debian 12 base, Debian's `prometheus` package
    (and wget for compose's health check), a non-root user, prom/prometheus's entry point (so
    deploy/compose's command serves either image). Returns its stage names."""
    name = "Dockerfile.prometheus"
    stages = split_stages(instructions(DOCKER / name))
    c.expect(len(stages) == 1 and re.match(r"^\$\{DEBIAN_IMAGE\}", stages[0][1] or ""),
             f"{name}: one stage on ${{DEBIAN_IMAGE}} (Debian 12)")
    steps = stages[0][2] if stages else []
    runs = " ".join(rest for word, rest in steps if word == "RUN")
    c.expect(re.search(r"apt-get install[^&]*\bprometheus\b[^&]*\bwget\b", runs) is not None,
             f"{name}: installs Debian's prometheus and wget")
    c.expect(("USER", "prometheus") in steps, f"{name}: runs as the package's prometheus user")
    c.expect(("ENTRYPOINT", '["/usr/bin/prometheus"]') in steps,
             f"{name}: entry point /usr/bin/prometheus")
    compose = (ROOT / "deploy" / "compose" / "docker-compose.yml").read_text()
    c.expect("${ZF_PROMETHEUS_IMAGE:-prom/prometheus:" in compose,
             "docker-compose.yml: Prometheus's image is ZF_PROMETHEUS_IMAGE (default the hub's)")
    return [s[0] for s in stages]


def main():
    c = Checker()
    binaries, stage_names = {}, {}
    for name in DOCKERFILES:
        binaries[name], stage_names[name] = check_dockerfile(c, name)
    stage_names["Dockerfile.prometheus"] = check_prometheus_dockerfile(c)
    c.expect("ARG DEBIAN_IMAGE=debian:12" in (DOCKER / "Dockerfile").read_text(),
             "Dockerfile: Debian 12 base")
    c.expect(stage_names["Dockerfile"][-1] == "runtime",
             "Dockerfile: the full image (runtime) is the last stage, the default target")
    built = check_documented_builds(c, stage_names)
    check_images(c, built, binaries)
    ignore = (ROOT / ".dockerignore").read_text().split()
    for pattern in ("build*/", ".git/", "runs/"):
        c.expect(pattern in ignore, f".dockerignore: {pattern}")
    check_users_match(c)
    return c.finish("deploy/docker")


if __name__ == "__main__":
    sys.exit(main())
