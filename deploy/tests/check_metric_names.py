#!/usr/bin/env python3
"""Checks that the metric names the dashboards and alerts use (fleet_spec.METRICS) are the names
the code registers: each zf_<component>_* family must appear as a string literal in that
component's sources. Components not in this checkout yet (their directory is missing) are
reported and skipped; names the sources register that fleet_spec.py lacks are listed as notes.

    deploy/tests/check_metric_names.py

Exit 0: all checks passed; 1: a check failed.
"""
import pathlib
import re
import sys

from fleet_spec import METRICS, Checker

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMPONENT_DIRS = {"inference": "inference_server", "replay": "replay", "actor": "actor",
                  "learner": "learner", "grpc": "common/grpc"}
# Any string literal naming a metric: most families are built with .Name("..."), but a helper
# such as the actor's counter("zf_actor_games_total", ...) passes the name on.
_NAME = re.compile(r'"(zf_[a-z0-9_]+)"')


def registered(directory):
    """Metric names appearing as string literals in non-test sources under directory."""
    names = set()
    for path in directory.rglob("*.cc"):
        if path.name.endswith("_test.cc"):
            continue
        names |= set(_NAME.findall(path.read_text(errors="replace")))
    return names


def main():
    c = Checker()
    for component, dirname in COMPONENT_DIRS.items():
        directory = ROOT / dirname
        wanted = {m for m in METRICS if m.startswith(f"zf_{component}_")}
        if not directory.is_dir():
            print(f"note: {dirname}/ is not in this checkout; {len(wanted)} zf_{component}_* "
                  "names not checked")
            continue
        names = registered(directory)
        for name in sorted(wanted):
            c.expect(name in names, f"{name}: used by deploy/ but not registered in {dirname}/")
        extra = sorted(names - METRICS)
        if extra:
            print(f"note: {dirname}/ registers names deploy/ does not use: {extra}")
    build_info = any('"zf_build_info"' in p.read_text(errors="replace")
                     for p in ROOT.glob("*/**/*.cc") if not p.name.endswith("_test.cc")
                     and "build" not in p.parts[len(ROOT.parts)])
    if not build_info:
        print("note: zf_build_info is not registered anywhere yet")
    return c.finish("metric names")


if __name__ == "__main__":
    sys.exit(main())
