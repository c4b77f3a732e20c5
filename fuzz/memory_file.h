// For fuzz targets whose parser reads a file: the input as an in-memory file (memfd), so a run
// touches no disk. Fuzz targets only.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace zf::fuzz {

// An in-memory file holding `data`, closed when this goes out of scope; path() names it.
class MemoryFile {
 public:
  MemoryFile(const uint8_t* data, size_t size) : fd_(memfd_create("fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) abort();
    for (size_t written = 0; written < size;) {
      ssize_t n = write(fd_, data + written, size - written);
      if (n <= 0) abort();
      written += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  const int fd_;
};

}  // namespace zf::fuzz
