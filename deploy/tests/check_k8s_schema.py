#!/usr/bin/env python3
"""Every object of every kustomize overlay of deploy/k8s, validated against the OpenAPI schema
of a current Kubernetes release (the npm package kubernetes-models, pinned in
deploy/tests/k8s-schema/package.json and installed there with `npm ci` on first use). An error
names the overlay, the object and the field. Also: the images the manifests name are the ones
`scripts/images` builds.

    deploy/tests/check_k8s_schema.py [--kubectl kubectl]

Exit 0: every object is valid; 1: some are not; 77: kubectl (kustomize v4+), node or npm is
missing, or npm could not install the package (ctest: skipped).
"""
import argparse
import json
import pathlib
import re
import shutil
import subprocess
import sys

from check_k8s import OVERLAYS, render

SKIP = 77
SCHEMA = pathlib.Path(__file__).resolve().parent / "k8s-schema"
ROOT = SCHEMA.parents[2]


def built_images():
    """The image tags scripts/images builds (zerofleet:cpu, zerofleet:actor)."""
    text = (ROOT / "scripts" / "images").read_text()
    return set(re.findall(r'tag_(?:cpu|actor)="(zerofleet:[a-z0-9-]+)"', text))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubectl", default="kubectl")
    args = parser.parse_args()
    kubectl = shutil.which(args.kubectl)
    for tool, found in (("kubectl", kubectl), ("node", shutil.which("node")),
                        ("npm", shutil.which("npm"))):
        if found is None:
            print(f"SKIP: {tool} not found")
            return SKIP
    if not (SCHEMA / "node_modules" / "kubernetes-models").is_dir():
        result = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=SCHEMA,
                                capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            print(f"SKIP: npm ci in {SCHEMA} failed: {result.stderr.strip()[-300:]}")
            return SKIP
    documents = []
    failures = []
    images = set()
    for overlay in OVERLAYS:
        objects = render(kubectl, overlay)
        documents.append(json.dumps({"overlay": overlay, "objects": objects}))
        for obj in objects:
            spec = obj.get("spec", {}).get("template", {}).get("spec", {})
            for container in spec.get("containers", []) + spec.get("initContainers", []):
                images.add((overlay, f"{obj['kind']}/{obj['metadata']['name']}",
                            container["image"]))
    result = subprocess.run(["node", str(SCHEMA / "validate.mjs")], cwd=SCHEMA,
                            input="\n".join(documents) + "\n", capture_output=True, text=True,
                            timeout=300)
    print(result.stdout.strip())
    if result.returncode != 0:
        failures.append(f"schema validation failed: {result.stderr.strip()[-500:]}")
    built = built_images()
    for overlay, name, image in sorted(images):
        # The CUDA image comes from Dockerfile.cuda (operations.md), not scripts/images.
        if image.startswith("zerofleet:") and image != "zerofleet:cuda" and image not in built:
            failures.append(f"{overlay}: {name} runs {image}, which scripts/images does not "
                            f"build ({sorted(built)})")
    for f in failures:
        print(f"FAIL: {f}")
    print("OK" if not failures else "FAILED", f"overlays {OVERLAYS}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
