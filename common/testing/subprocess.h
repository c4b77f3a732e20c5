// Runs a child process to completion and captures its output (tests and benchmarks only).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace zf::testing {

struct ProcessResult {
  int exit_code = -1;    // the exit status, or 128 + signal number if killed by a signal
  std::string stdout_text;
  std::string stderr_text;
};

// Runs argv[0] (a path, or a name looked up in PATH) with `argv`, feeding `stdin_text` to its
// standard input, and waits up to `timeout`; a child still running then is killed with SIGKILL.
// Returns: the result; Internal if the process could not be started; DeadlineExceeded on timeout.
absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const std::string& stdin_text = "",
                                         absl::Duration timeout = absl::Seconds(120));

}  // namespace zf::testing
