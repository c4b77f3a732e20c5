#!/usr/bin/env bash
# Prints the Debian packages that provide the shared libraries BINARY links directly (its NEEDED
# entries), one per line, so a runtime image installs exactly those and apt brings their own
# dependencies. Used by deploy/docker/Dockerfile:
#   deploy/docker/runtime-packages.sh build/cli/zf
set -euo pipefail
binary="${1:?usage: runtime-packages.sh BINARY}"
needed=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
resolved=$(ldd "$binary")
for name in $needed; do
  lib=$(awk -v n="$name" '$1 == n && $3 ~ /^\// {print $3}' <<<"$resolved")
  if [ -z "$lib" ]; then echo "runtime-packages: $name does not resolve" >&2; exit 1; fi
  found=""
  # Debian 12 has a merged /usr, but dpkg may have registered a library under either path.
  for path in "$lib" "$(readlink -f "$lib")" "${lib#/usr}" "/usr${lib}"; do
    if owner=$(dpkg-query -S "$path" 2>/dev/null); then
      echo "${owner%%:*}"
      found=1
      break
    fi
  done
  if [ -z "$found" ]; then echo "runtime-packages: no package owns $lib" >&2; exit 1; fi
done | sed 's/, /\n/g' | sort -u
