// Sending log lines to a file (common/logging.h's ZF_LOG writes to stderr otherwise).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "common/logging.h"

namespace zf::logging {

// Sends every message from now on to the file at `path` (appended, created if missing) and only
// those of `stderr_min` or above to stderr as well, so a command's terminal shows its warnings
// and errors while the file keeps everything. Returns: OK; an error naming the path and the
// reason if the file cannot be opened (messages keep going to stderr). An empty path goes back
// to stderr only. Thread-safe; call it once, early (a later call leaves the earlier file open).
absl::Status LogToFile(const std::string& path, Level stderr_min = Level::kWarning);

}  // namespace zf::logging
