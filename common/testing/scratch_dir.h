// Scratch directories for tests, removed when the test binary exits, so that repeated test runs
// do not leave one directory per run in /tmp.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace zf::testing {
namespace internal {

struct ScratchDirs {
  std::mutex mu;
  pid_t owner = 0;  // the process that registered them
  std::vector<std::string> paths;
};

// Never destroyed (static objects' destructors run in no set order); std::atexit removes the
// directories instead, and only in the process that registered them (a forked child that calls
// exit() must not remove its parent's directories).
inline ScratchDirs& RegisteredScratchDirs() {
  static ScratchDirs* dirs = [] {
    auto* d = new ScratchDirs;
    d->owner = ::getpid();
    std::atexit([] {
      ScratchDirs& all = RegisteredScratchDirs();
      std::lock_guard<std::mutex> lock(all.mu);
      if (::getpid() != all.owner) return;
      for (const std::string& path : all.paths) {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
      }
    });
    return d;
  }();
  return *dirs;
}

}  // namespace internal

// Removes `path` and everything in it when this process exits normally (whether its tests passed
// or failed; a crash leaves it behind).
inline void RemoveAtExit(const std::string& path) {
  internal::ScratchDirs& dirs = internal::RegisteredScratchDirs();
  std::lock_guard<std::mutex> lock(dirs.mu);
  dirs.paths.push_back(path);
}

// The path ::testing::TempDir()/NAME_PID, emptied (removed if it exists; not created), removed
// again at exit (RemoveAtExit).
inline std::string ScratchDir(const std::string& name) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name, "_", ::getpid());
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
  RemoveAtExit(path);
  return path;
}

}  // namespace zf::testing
