// A child process running in the background (tests only): started with posix_spawn, its stdout
// and stderr written to files, stopped with a signal, waited for.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace zf::testing {

// Thread-compatible. The destructor kills (SIGKILL) and reaps a child that is still running.
class BackgroundProcess {
 public:
  // Starts argv[0] (a path, or a name looked up in PATH) with `argv`; its standard input is
  // /dev/null, its stdout and stderr go to `output_prefix` + ".stdout" / ".stderr" (truncated).
  // Returns: the running process; Internal if it could not be started.
  static absl::StatusOr<std::unique_ptr<BackgroundProcess>> Start(
      const std::vector<std::string>& argv, const std::string& output_prefix);
  ~BackgroundProcess();

  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // Sends `signal` (e.g. SIGTERM, SIGKILL). No effect once the child has been reaped.
  void Signal(int signal);
  // Waits until the child exits or `timeout` passes.
  // Returns: the exit code (128 + signal number if killed by a signal); DeadlineExceeded.
  absl::StatusOr<int> Wait(absl::Duration timeout);
  // Whether the child has not been reaped and has not exited (reaps it if it has).
  bool Running();

  // What the child has written so far.
  std::string Stdout() const;
  std::string Stderr() const;
  pid_t pid() const { return pid_; }

 private:
  BackgroundProcess(pid_t pid, std::string output_prefix)
      : pid_(pid), output_prefix_(std::move(output_prefix)) {}
  // Non-blocking reap; true if the child has exited (exit_code_ set).
  bool Reap();

  pid_t pid_;
  std::string output_prefix_;
  bool reaped_ = false;
  int exit_code_ = -1;
};

}  // namespace zf::testing
