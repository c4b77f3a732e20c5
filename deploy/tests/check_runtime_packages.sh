#!/usr/bin/env bash
# Checks deploy/docker/runtime-packages.sh on the built binaries: it must name the Debian packages
# of the libraries each links (the images install exactly those). zf is what the actor image
# (deploy/docker/Dockerfile, stage actor) holds alone: no LibTorch, so no libtorch package;
# zf-torch, in the full image beside it, links LibTorch.
#   deploy/tests/check_runtime_packages.sh build/cli/zf build/cli/zf-torch
# Exit 0: passed; 1: failed; 77: a binary is not built (ctest: skipped).
set -euo pipefail -f  # -f: the package patterns below are not file globs
zf="${1:?usage: check_runtime_packages.sh ZF_BINARY ZF_TORCH_BINARY}"
zf_torch="${2:?usage: check_runtime_packages.sh ZF_BINARY ZF_TORCH_BINARY}"
for binary in "$zf" "$zf_torch"; do
  if [ ! -x "$binary" ]; then echo "SKIP: $binary is not built"; exit 77; fi
done
here="$(cd "$(dirname "$0")" && pwd)"
status=0
fail() { echo "FAIL: $*"; status=1; }
# check BINARY "EXPECTED PACKAGES" "UNEXPECTED PACKAGE PATTERNS (extended regexps, whole names)"
check() {
  local packages
  if ! packages="$("$here/../docker/runtime-packages.sh" "$1")"; then
    fail "runtime-packages.sh $1"; return
  fi
  echo "$1: $(echo "$packages" | tr '\n' ' ')"
  for expected in $2; do
    grep -qx -- "$expected" <<<"$packages" || fail "runtime-packages.sh $1 does not name $expected"
  done
  for unexpected in $3; do
    if grep -qxE -- "$unexpected" <<<"$packages"; then
      fail "runtime-packages.sh $1 names $(grep -xE -- "$unexpected" <<<"$packages" | tr '\n' ' ')"
    fi
  done
}
common="libabsl20220623 libgrpc++1.51 libprotobuf32 libcpp-httplib0.11 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 zlib1g"
build_only='.*-dev'
check "$zf" "$common" "$build_only libtorch.* libopenblas.* libc10.*"
check "$zf_torch" "$common libtorch1.13 libssl3" "$build_only"
[ $status -eq 0 ] && echo "OK runtime packages of $zf (no LibTorch) and $zf_torch"
exit $status
