// zf_build_info: the conventional Prometheus "info" gauge every zerofleet process exposes,
//
//   # HELP zf_build_info zerofleet build that this process runs (value is always 1).
//   # TYPE zf_build_info gauge
//   zf_build_info{component="inference",version="0.1.0+61a2237-dirty"} 1
//
// The version is fixed when CMake configures the build: the project version, then "+" and
// `git describe --always --dirty` when the source is a git checkout (else "+unknown").
#pragma once

#include <string>

#include "prometheus/registry.h"

namespace zf::metrics {

// The version string above, e.g. "0.1.0+61a2237".
const std::string& BuildVersion();

// Registers zf_build_info{component, version} = 1 in `registry`, and
// zf_process_start_time_seconds (when this process first called this function, Unix seconds).
// `component` names the process role ("inference", "replay", "actor", "learner"); it must be
// non-empty (ZF_CHECK). Idempotent for the same component. Thread-safe (prometheus::Registry is).
void RegisterBuildInfo(prometheus::Registry& registry, const std::string& component);

}  // namespace zf::metrics
