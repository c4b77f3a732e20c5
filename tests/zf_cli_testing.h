// Helpers for tests that run the real `zf` binary (its path is the ZF_BINARY macro, set by
// tests/CMakeLists.txt).
#pragma once

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/testing/background_process.h"
#include "common/testing/subprocess.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::testing {

// Runs `zf args...` with `stdin_text` on its standard input; a failure to start is a test failure.
inline ProcessResult Zf(std::vector<std::string> args, const std::string& stdin_text = "") {
  args.insert(args.begin(), ZF_BINARY);
  absl::StatusOr<ProcessResult> result = RunProcess(args, stdin_text);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : ProcessResult{};
}

// Bad input: exit code 2 and exactly one line on stderr, starting with "zf" and containing
// `needle`.
inline void ExpectUsageError(const std::vector<std::string>& args, const std::string& needle) {
  ProcessResult r = Zf(args);
  std::string joined;
  for (const auto& a : args) joined += a + " ";
  EXPECT_EQ(r.exit_code, 2) << joined << "\nstderr: " << r.stderr_text;
  EXPECT_THAT(r.stderr_text, ::testing::StartsWith("zf")) << joined;
  EXPECT_THAT(r.stderr_text, ::testing::HasSubstr(needle)) << joined;
  EXPECT_EQ(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n'), 1) << r.stderr_text;
}

// The port from `zf inference`'s "... on port N" line in `out`, or 0 before it is printed.
inline int ServedPort(const std::string& out) {
  const size_t at = out.find(" on port ");
  if (at == std::string::npos) return 0;
  size_t end = at + 9;
  while (end < out.size() && std::isdigit(static_cast<unsigned char>(out[end]))) ++end;
  int port = 0;
  return absl::SimpleAtoi(out.substr(at + 9, end - at - 9), &port) ? port : 0;
}

// A `zf inference` for tictactoe (fresh 1 x 8 network, seed 3) on a free loopback port, its output
// under `output_prefix`; returns once it has printed its port (ServedPort of its Stdout()).
// Needs zf_background_process_testing. Returns: Internal if it cannot start or does not serve
// within 120 s (the message holds its stderr).
inline absl::StatusOr<std::unique_ptr<BackgroundProcess>> StartTicTacToeInference(
    const std::string& output_prefix) {
  absl::StatusOr<std::unique_ptr<BackgroundProcess>> server =
      BackgroundProcess::Start({ZF_BINARY, "inference", "--listen=127.0.0.1:0", "--game=tictactoe",
                                "--blocks=1", "--filters=8", "--seed=3"},
                               output_prefix);
  if (!server.ok()) return server.status();
  if (!WaitFor([&] { return ServedPort((*server)->Stdout()) != 0; }, absl::Seconds(120))) {
    return absl::InternalError(absl::StrCat("zf inference did not serve: ", (*server)->Stderr()));
  }
  return server;
}

}  // namespace zf::testing
