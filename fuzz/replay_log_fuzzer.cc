// libFuzzer target: replay log segments (replay/log.h) as a damaged disk leaves them. A shard
// reads its segments at every start, so whatever bytes are there, recovery must not crash, and
// every byte of a segment is accounted for: the magic, an intact record or one damaged region,
// in order, never overlapping. The bytes become one segment file in a directory under /dev/shm
// (memory) that Log::Read scans.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "replay/log.h"

namespace {

// Never destroyed: the exit handler that removes the directory runs after static destructors.
const std::string& Dir() {
  static const std::string* dir = [] {
    auto* d = new std::string("/dev/shm/zf-replay-log-fuzzer-" + std::to_string(::getpid()));
    std::filesystem::create_directories(*d);
    std::atexit([] { std::filesystem::remove_all(Dir()); });
    return d;
  }();
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = Dir() + "/segment-00000000000000000001.zlog";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  int64_t payload_bytes = 0;
  int64_t records = 0;
  int64_t last_end = 0;
  bool bad_magic = false;
  auto report = zf::replay::Log::Read(
      Dir(), /*max_record_bytes=*/1 << 20,
      [&](zf::replay::SegmentId, absl::string_view payload) {
        if (payload.empty()) abort();
        payload_bytes += static_cast<int64_t>(payload.size());
        ++records;
        return absl::OkStatus();
      },
      [&](const zf::replay::DamagedRegion& region, absl::string_view bytes) {
        if (region.bytes < 1 || region.offset < last_end ||
            region.offset + region.bytes > static_cast<int64_t>(size) ||
            static_cast<int64_t>(bytes.size()) != region.bytes ||
            bytes != absl::string_view(reinterpret_cast<const char*>(data) + region.offset,
                                       static_cast<size_t>(region.bytes))) {
          abort();
        }
        if (region.offset == 0 && region.problem == "bad magic") bad_magic = true;
        last_end = region.offset + region.bytes;
      });
  if (!report.ok()) abort();  // one readable file: only the visitors could fail, and they do not
  if (report->records != records) abort();
  // Kept bytes (the magic, or the 8 a repair would write for a bad one) and damaged bytes make
  // up the file exactly.
  const int64_t accounted = report->bytes + report->torn_bytes + report->corrupt_bytes;
  if (accounted != static_cast<int64_t>(size) + (bad_magic ? 8 : 0)) {
    abort();
  }
  if (payload_bytes > report->bytes) abort();
  return 0;
}
