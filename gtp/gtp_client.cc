#include "gtp/gtp_client.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace zf::gtp {

absl::StatusOr<std::string> FindOnPath(const std::string& name, bool also_usr_games) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) dirs = absl::StrSplit(path, ':', absl::SkipEmpty());
  if (also_usr_games) dirs.push_back("/usr/games");
  for (const std::string& dir : dirs) {
    const std::string candidate = dir + "/" + name;
    struct stat info {};
    if (stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return absl::NotFoundError(
      absl::StrCat("\"", name, "\" not found on PATH", also_usr_games ? " or in /usr/games" : ""));
}

absl::StatusOr<std::string> FindGnuGo() {
  absl::StatusOr<std::string> found = FindOnPath("gnugo", /*also_usr_games=*/true);
  if (found.ok()) return found;
  return absl::NotFoundError(
      "GNU Go not found on PATH or in /usr/games: install the Debian package `gnugo`");
}

absl::Status GtpClient::Options::Validate() const {
  if (argv.empty() || argv[0].empty()) {
    return absl::InvalidArgumentError("GtpClient: argv must name the engine's binary");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GtpClient>> GtpClient::Create(Options options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { signal(SIGPIPE, SIG_IGN); });
  int to_child[2];
  int from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  if (pipe2(from_child, O_CLOEXEC) != 0) {
    close(to_child[0]);
    close(to_child[1]);
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  std::vector<char*> args;
  for (const std::string& arg : options.argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc =
      posix_spawn(&pid, options.argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(to_child[0]);
  close(from_child[1]);
  if (rc != 0) {
    close(to_child[1]);
    close(from_child[0]);
    return absl::InternalError(
        absl::StrCat("cannot start GTP engine ", options.argv[0], ": ", std::strerror(rc)));
  }
  auto client = std::unique_ptr<GtpClient>(new GtpClient());
  client->pid_ = pid;
  client->in_ = fdopen(to_child[1], "w");
  client->out_ = fdopen(from_child[0], "r");
  return client;
}

GtpClient::~GtpClient() {
  if (in_ != nullptr) {
    std::fputs("quit\n", in_);
    std::fclose(in_);
  }
  if (out_ != nullptr) std::fclose(out_);
  if (pid_ > 0) {
    int status = 0;
    // Polling, not a timed wait: waitpid has no deadline and the engine normally exits at once.
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, &status, WNOHANG) != 0) return;
      usleep(10000);
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
}

absl::StatusOr<std::string> GtpClient::Send(absl::string_view command) {
  if (absl::StrContains(command, '\n')) {
    return absl::InvalidArgumentError("a GTP command must be one line");
  }
  const std::string line = absl::StrCat(command, "\n");
  if (std::fputs(line.c_str(), in_) == EOF || std::fflush(in_) != 0) {
    return absl::UnavailableError(absl::StrCat("GTP engine gone before \"", command, "\""));
  }
  std::string reply;
  char buffer[8192];
  while (true) {
    if (std::fgets(buffer, sizeof(buffer), out_) == nullptr) {
      return absl::UnavailableError(absl::StrCat("GTP engine closed after \"", command, "\""));
    }
    absl::string_view text = buffer;
    if (reply.empty() && absl::StripAsciiWhitespace(text).empty()) continue;  // stray blank line
    if (absl::StripAsciiWhitespace(text).empty()) break;  // a reply ends with an empty line
    reply += buffer;
  }
  absl::string_view text = absl::StripAsciiWhitespace(reply);
  const bool ok = absl::ConsumePrefix(&text, "=");
  if (!ok) absl::ConsumePrefix(&text, "?");
  // An optional numeric id follows the status character.
  while (!text.empty() && absl::ascii_isdigit(text.front())) text.remove_prefix(1);
  text = absl::StripAsciiWhitespace(text);
  if (ok) return std::string(text);
  return absl::FailedPreconditionError(absl::StrCat(command, ": ", text));
}

}  // namespace zf::gtp
