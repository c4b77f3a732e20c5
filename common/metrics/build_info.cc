#include "common/metrics/build_info.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "prometheus/gauge.h"

#ifndef ZF_BUILD_VERSION
#define ZF_BUILD_VERSION "unknown"
#endif

namespace zf::metrics {

const std::string& BuildVersion() {
  static const std::string* const version = new std::string(ZF_BUILD_VERSION);
  return *version;
}

void RegisterBuildInfo(prometheus::Registry& registry, const std::string& component) {
  ZF_CHECK(!component.empty()) << "RegisterBuildInfo: empty component";
  prometheus::BuildGauge()
      .Name("zf_build_info")
      .Help("zerofleet build that this process runs (value is always 1).")
      .Register(registry)
      .Add({{"component", component}, {"version", BuildVersion()}})
      .Set(1);
  // The first registration is at start-up; a restart shows as a change of this value.
  static const double start_time = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  prometheus::BuildGauge()
      .Name("zf_process_start_time_seconds")
      .Help("When this process started, in seconds since the Unix epoch (a change is a restart).")
      .Register(registry)
      .Add({})
      .Set(start_time);
}

}  // namespace zf::metrics
