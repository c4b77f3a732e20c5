#include "common/host_info.h"

#include <fstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace zf {

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "model name")) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return "unknown CPU";
}

}  // namespace zf
