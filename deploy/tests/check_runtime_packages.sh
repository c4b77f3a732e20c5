#!/usr/bin/env bash
# Checks deploy/docker/runtime-packages.sh on the built zf: it must name the Debian packages of
# the libraries zf links (the runtime image installs exactly those).
#   deploy/tests/check_runtime_packages.sh build/cli/zf
# Exit 0: passed; 1: failed; 77: zf is not built (ctest: skipped).
set -euo pipefail
zf="${1:?usage: check_runtime_packages.sh ZF_BINARY}"
if [ ! -x "$zf" ]; then echo "SKIP: $zf is not built"; exit 77; fi
here="$(cd "$(dirname "$0")" && pwd)"
packages="$("$here/../docker/runtime-packages.sh" "$zf")"
echo "$packages" | tr '\n' ' '; echo
status=0
for expected in libabsl20220623 libgrpc++1.51 libprotobuf32 libcpp-httplib0.11 libtorch1.13 libssl3 zlib1g; do
  if ! grep -qx -- "$expected" <<<"$packages"; then
    echo "FAIL: runtime-packages.sh does not name $expected"; status=1
  fi
done
for unexpected in libtorch-dev libgrpc++-dev libabsl-dev; do
  if grep -qx -- "$unexpected" <<<"$packages"; then
    echo "FAIL: runtime-packages.sh names the build-only package $unexpected"; status=1
  fi
done
[ $status -eq 0 ] && echo "OK runtime packages of $zf"
exit $status
