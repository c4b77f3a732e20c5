// A client for a GTP (Go Text Protocol, version 2) engine run as a subprocess, such as GNU Go.
//
//   ZF_ASSIGN_OR_RETURN(std::string gnugo, FindGnuGo());
//   ZF_ASSIGN_OR_RETURN(auto engine, GtpClient::Create({.argv = {gnugo, "--mode", "gtp"}}));
//   ZF_ASSIGN_OR_RETURN(std::string move, engine->Send("genmove black"));  // e.g. "D4"
//
// The child's standard input and output are two pipes; its standard error is inherited.
// Commands are sent one at a time and each reply is read to its terminating empty line.
//
// Thread-compatibility: thread-compatible (one thread talks to an engine at a time).
// Ownership: the client owns the child process. The destructor sends "quit", closes the pipes
// and reaps the child, killing it with SIGKILL if it has not exited within about a second.
// Process-wide effect: Create sets SIGPIPE to SIG_IGN (once), so that an engine that dies makes
// Send fail with Unavailable instead of killing this process.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zf::gtp {

// GNU Go's binary: `gnugo` on PATH, else /usr/games/gnugo (where Debian puts it, often not on
// PATH).
// Returns: the path; NotFound naming the Debian package `gnugo` when there is none.
absl::StatusOr<std::string> FindGnuGo();

// The path of the executable `name` in PATH's directories (then /usr/games when asked, where
// Debian puts game engines). Returns: the path; NotFound naming it.
absl::StatusOr<std::string> FindOnPath(const std::string& name, bool also_usr_games = true);

class GtpClient {
 public:
  struct Options {
    // The engine's command line; argv[0] is a path (not looked up in PATH).
    std::vector<std::string> argv;
    // Returns: InvalidArgument if argv is empty.
    absl::Status Validate() const;
  };

  // Starts the engine. Does not wait for it to answer anything.
  // Returns: the client; InvalidArgument for bad options; Internal if the process could not be
  // started (e.g. argv[0] does not exist).
  static absl::StatusOr<std::unique_ptr<GtpClient>> Create(Options options);

  GtpClient(const GtpClient&) = delete;
  GtpClient& operator=(const GtpClient&) = delete;
  ~GtpClient();

  // Sends one command (no newline; it must not contain one) and blocks until the engine's whole
  // reply has arrived (no deadline: a hung engine blocks the caller).
  // Returns: the text after "=" (and the optional command id), whitespace-trimmed, lines
  // joined by '\n'; FailedPrecondition with the command and the engine's error text for a "?"
  // reply; InvalidArgument for a command containing a newline; Unavailable if the engine has
  // exited or closed its output.
  absl::StatusOr<std::string> Send(absl::string_view command);

  pid_t pid() const { return pid_; }

 private:
  GtpClient() = default;
  pid_t pid_ = -1;
  FILE* in_ = nullptr;   // the child's standard input
  FILE* out_ = nullptr;  // the child's standard output
};

}  // namespace zf::gtp
