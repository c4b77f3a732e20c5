#include "common/metrics/build_info.h"

#include "common/logging.h"
#include "common/metrics/gauge.h"

#ifndef ZF_BUILD_VERSION
#define ZF_BUILD_VERSION "unknown"
#endif

namespace zf::metrics {

const std::string& BuildVersion() {
  static const std::string* const version = new std::string(ZF_BUILD_VERSION);
  return *version;
}

void RegisterBuildInfo(Registry& registry, const std::string& component) {
  ZF_CHECK(!component.empty()) << "RegisterBuildInfo: empty component";
  BuildGauge()
      .Name("zf_build_info")
      .Help("zerofleet build that this process runs (value is always 1).")
      .Register(registry)
      .Add({{"component", component}, {"version", BuildVersion()}})
      .Set(1);
}

}  // namespace zf::metrics
