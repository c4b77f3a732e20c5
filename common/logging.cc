#include "common/logging.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log_file.h"

namespace zf::logging {
namespace {

Level InitialLevel() {
  const char* env = std::getenv("ZF_MIN_LOG_LEVEL");
  if (env == nullptr) return Level::kInfo;
  int v = std::atoi(env);
  if (v < 0) v = 0;
  if (v > 3) v = 3;
  return static_cast<Level>(v);
}

std::atomic<int>& MinLevelStorage() {
  static std::atomic<int> level{static_cast<int>(InitialLevel())};
  return level;
}

// The log file's descriptor (-1: none) and the lowest level that still goes to stderr.
std::atomic<int> g_log_fd{-1};
std::atomic<int> g_stderr_min{0};

const char* Basename(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

void SetMinLevel(Level level) { MinLevelStorage().store(static_cast<int>(level)); }
Level MinLevel() { return static_cast<Level>(MinLevelStorage().load(std::memory_order_relaxed)); }

absl::Status LogToFile(const std::string& path, Level stderr_min) {
  if (path.empty()) {
    g_log_fd.store(-1);
    return absl::OkStatus();
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open log file ", path, ": ", std::strerror(errno)));
  }
  g_stderr_min.store(static_cast<int>(stderr_min));
  g_log_fd.store(fd);
  return absl::OkStatus();
}

LogMessage::LogMessage(const char* file, int line, Level level)
    : file_(file), line_(line), level_(level) {}

LogMessage::~LogMessage() {
  static constexpr char kLetters[] = {'I', 'W', 'E', 'F'};
  std::string line = absl::FormatTime("%m%d %H:%M:%E3S", absl::Now(), absl::LocalTimeZone());
  std::string text = stream_.str();
  // One write(2) per message keeps lines from different threads whole.
  std::string out;
  out.reserve(line.size() + text.size() + 64);
  out += kLetters[static_cast<int>(level_)];
  out += line;
  out += ' ';
  out += std::to_string(static_cast<long>(::syscall(SYS_gettid)));
  out += ' ';
  out += Basename(file_);
  out += ':';
  out += std::to_string(line_);
  out += "] ";
  out += text;
  out += '\n';
  const int fd = g_log_fd.load();
  if (fd >= 0) {
    ssize_t ignored = ::write(fd, out.data(), out.size());
    (void)ignored;
  }
  if (fd < 0 || static_cast<int>(level_) >= g_stderr_min.load()) {
    ssize_t ignored = ::write(STDERR_FILENO, out.data(), out.size());
    (void)ignored;
  }
  if (level_ == Level::kFatal) std::abort();
}

}  // namespace zf::logging
