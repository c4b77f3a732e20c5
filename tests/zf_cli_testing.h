// Helpers for tests that run the real `zf` binary (its path is the ZF_BINARY macro, set by
// tests/CMakeLists.txt).
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "common/testing/subprocess.h"
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

}  // namespace zf::testing
