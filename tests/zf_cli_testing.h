// Helpers for tests that run the real `zf` binary (its path is the ZF_BINARY macro, set by
// tests/CMakeLists.txt).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

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

}  // namespace zf::testing
