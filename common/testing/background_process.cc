#include "common/testing/background_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace zf::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<BackgroundProcess>> BackgroundProcess::Start(
    const std::vector<std::string>& argv, const std::string& output_prefix) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::string out = output_prefix + ".stdout";
  std::string err = output_prefix + ".stderr";
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // The child starts with an empty signal mask and default dispositions, whatever the test's
  // threads have blocked.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, all;
  sigemptyset(&none);
  sigemptyset(&all);
  sigaddset(&all, SIGINT);
  sigaddset(&all, SIGTERM);
  sigaddset(&all, SIGPIPE);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("cannot start ", argv[0], ": ", std::strerror(rc)));
  }
  return std::unique_ptr<BackgroundProcess>(new BackgroundProcess(pid, output_prefix));
}

BackgroundProcess::~BackgroundProcess() {
  if (reaped_) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

void BackgroundProcess::Signal(int signal) {
  if (!reaped_) kill(pid_, signal);
}

bool BackgroundProcess::Reap() {
  if (reaped_) return true;
  int status = 0;
  pid_t done = waitpid(pid_, &status, WNOHANG);
  if (done != pid_) return false;
  reaped_ = true;
  exit_code_ = ExitCode(status);
  return true;
}

absl::StatusOr<int> BackgroundProcess::Wait(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  // Bounded polling: waitpid has no timeout, and a SIGCHLD handler would be process-wide.
  while (!Reap()) {
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("pid ", pid_, " still running"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return exit_code_;
}

bool BackgroundProcess::Running() { return !Reap(); }

std::string BackgroundProcess::Stdout() const { return ReadFile(output_prefix_ + ".stdout"); }
std::string BackgroundProcess::Stderr() const { return ReadFile(output_prefix_ + ".stderr"); }

}  // namespace zf::testing
