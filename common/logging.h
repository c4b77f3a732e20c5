// Minimal leveled logging and invariant checks (Abseil 20220623 has no absl/log).
//
//   ZF_LOG(INFO) << "listening on " << port;   // levels: INFO, WARNING, ERROR, FATAL
//   ZF_CHECK(ptr != nullptr) << "why";          // our own bugs only; aborts with file:line
//   ZF_DCHECK(cond);                            // like ZF_CHECK in debug builds, free in NDEBUG
//
// Each message is one line on stderr: "I1122 10:04:05.123 12345 file.cc:42] text". Lines from
// different threads never interleave. Thread-safe. The names avoid glog's LOG/CHECK, which
// LibTorch pulls in.
#pragma once

#include <sstream>
#include <string>

namespace zf::logging {

enum class Level { kInfo = 0, kWarning = 1, kError = 2, kFatal = 3 };

// Messages below this level are dropped. Default kInfo; ZF_MIN_LOG_LEVEL=1..3 in the environment
// raises it at start-up. Thread-safe.
void SetMinLevel(Level level);
Level MinLevel();

// One log line under construction; emitted (and for kFatal, the process aborted) on destruction.
class LogMessage {
 public:
  LogMessage(const char* file, int line, Level level);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  Level level_;
  std::ostringstream stream_;
};

// Swallows the stream expression of a disabled log statement.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace zf::logging

#define ZF_LOG_LEVEL_INFO ::zf::logging::Level::kInfo
#define ZF_LOG_LEVEL_WARNING ::zf::logging::Level::kWarning
#define ZF_LOG_LEVEL_ERROR ::zf::logging::Level::kError
#define ZF_LOG_LEVEL_FATAL ::zf::logging::Level::kFatal

#define ZF_LOG(level)                                                          \
  !(ZF_LOG_LEVEL_##level >= ::zf::logging::MinLevel())                         \
      ? (void)0                                                                \
      : ::zf::logging::Voidify() &                                             \
            ::zf::logging::LogMessage(__FILE__, __LINE__, ZF_LOG_LEVEL_##level) \
                .stream()

#define ZF_CHECK(cond)                                                                   \
  (cond) ? (void)0                                                                       \
         : ::zf::logging::Voidify() &                                                    \
               ::zf::logging::LogMessage(__FILE__, __LINE__, ::zf::logging::Level::kFatal) \
                       .stream()                                                         \
                   << "Check failed: " #cond " "

#ifdef NDEBUG
#define ZF_DCHECK(cond) \
  while (false) ZF_CHECK(cond)
#else
#define ZF_DCHECK(cond) ZF_CHECK(cond)
#endif
