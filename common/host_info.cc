#include "common/host_info.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

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

int64_t ProcStatusField(const std::string& pid, const std::string& name) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  const std::string prefix = name + ":";
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      int64_t value = 0;
      std::istringstream fields(line.substr(prefix.size()));
      fields >> value;
      return value;
    }
  }
  return 0;
}

int64_t PeakResidentBytes(const std::string& pid) { return ProcStatusField(pid, "VmHWM") * 1024; }

namespace {

// User + system CPU seconds in a /proc stat file (a process's or one thread's), or 0.
double StatCpuSeconds(const std::string& path) {
  std::ifstream in(path);
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t end_of_name = stat.rfind(')');  // the name may hold spaces and parentheses
  if (end_of_name == std::string::npos || end_of_name + 2 > stat.size()) return 0;
  std::istringstream fields(stat.substr(end_of_name + 2));
  std::string field;
  int64_t utime = 0;
  int64_t stime = 0;
  // After the name: field 3 (state) onwards; utime and stime are fields 14 and 15, in ticks.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::strtoll(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoll(field.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

double ProcessCpuSeconds(const std::string& pid) {
  return StatCpuSeconds(absl::StrCat("/proc/", pid, "/stat"));
}

double ThreadsCpuSeconds(const std::string& pid, const std::string& name_prefix) {
  double total = 0;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"), ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (absl::StartsWith(name, name_prefix)) total += StatCpuSeconds(task.path() / "stat");
  }
  return total;
}

}  // namespace zf
