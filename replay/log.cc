#include "replay/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "common/logging.h"
#include "common/metrics/buckets.h"

namespace zf::replay {
namespace {

constexpr int64_t kMagicSize = 8;
constexpr char kMagicV1[] = "ZFRLOG01";  // read only: [length][crc][payload]
constexpr char kMagic[] = "ZFRLOG02";    // [sync][length][crc][header crc][payload]
constexpr char kSync[] = "ZFRM";
constexpr int64_t kSyncSize = 4;
constexpr int64_t kHeaderSizeV1 = 8;
constexpr int64_t kHeaderSize = 16;
constexpr char kDamagedDir[] = "damaged";
constexpr char kPrefix[] = "segment-";
constexpr char kSuffix[] = ".zlog";

// A full disk or quota is back-pressure (ResourceExhausted: nothing was stored, retry later);
// every other errno is Internal.
absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(errno));
  if (errno == ENOSPC || errno == EDQUOT) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
uint32_t Crc(absl::string_view payload) {
  return static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                     reinterpret_cast<const Bytef*>(payload.data()),
                                     static_cast<uInt>(payload.size())));
}

absl::Status WriteAll(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    ssize_t w = ::write(fd, data, size);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write", path);
    }
    data += w;
    size -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

absl::Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open directory", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return ErrnoError("fsync directory", dir);
  return absl::OkStatus();
}

// The segment ids in `dir`, ascending.
absl::StatusOr<std::vector<SegmentId>> ListSegments(const std::string& dir) {
  std::error_code ec;
  std::vector<SegmentId> ids;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != strlen(kPrefix) + 20 + strlen(kSuffix) || !name.starts_with(kPrefix) ||
        !name.ends_with(kSuffix)) {
      continue;
    }
    const std::string digits = name.substr(strlen(kPrefix), 20);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    ids.push_back(std::stoull(digits));
  }
  if (ec) return absl::InternalError(absl::StrCat("list ", dir, ": ", ec.message()));
  std::sort(ids.begin(), ids.end());
  return ids;
}

// What the frame at one offset is.
struct Frame {
  bool intact = false;
  int64_t length = -1;  // the payload's length when the header is intact (else -1)
  std::string problem;  // why it is not intact
};

Frame ParseFrame(bool v1, absl::string_view data, int64_t pos, int64_t max_record_bytes) {
  Frame frame;
  const int64_t left = static_cast<int64_t>(data.size()) - pos;
  const int64_t header = v1 ? kHeaderSizeV1 : kHeaderSize;
  if (left < header) {
    frame.problem = "torn record header";
    return frame;
  }
  const char* p = data.data() + pos;
  const int64_t offset = v1 ? 0 : kSyncSize;  // where the length is
  if (!v1) {
    if (std::memcmp(p, kSync, kSyncSize) != 0) {
      frame.problem = "no record sync bytes";
      return frame;
    }
    if (Crc(absl::string_view(p, 12)) != GetU32(p + 12)) {
      frame.problem = "record header checksum mismatch";
      return frame;
    }
  }
  const int64_t len = GetU32(p + offset);
  if (len < 1 || len > max_record_bytes) {
    frame.problem = absl::StrCat("bad record length ", len);
    return frame;
  }
  if (!v1) frame.length = len;  // a v1 length has no checksum of its own
  if (left - header < len) {
    frame.problem = "torn record payload";
    return frame;
  }
  if (Crc(absl::string_view(p + header, static_cast<size_t>(len))) != GetU32(p + offset + 4)) {
    frame.problem = "checksum mismatch";
    return frame;
  }
  frame.intact = true;
  frame.length = len;
  return frame;
}

// The offset of the first intact ZFRLOG02 record at or after `from`, or data.size().
int64_t FindIntactFrame(absl::string_view data, int64_t from, int64_t max_record_bytes) {
  const absl::string_view sync(kSync, kSyncSize);
  while (from < static_cast<int64_t>(data.size())) {
    const size_t at = data.find(sync, static_cast<size_t>(from));
    if (at == absl::string_view::npos) break;
    if (ParseFrame(/*v1=*/false, data, static_cast<int64_t>(at), max_record_bytes).intact) {
      return static_cast<int64_t>(at);
    }
    from = static_cast<int64_t>(at) + 1;
  }
  return static_cast<int64_t>(data.size());
}

// What one segment file holds: its records and damaged regions.
struct SegmentScan {
  int64_t intact_bytes = 0;  // magic + intact records
  int64_t records = 0;
  bool v1 = false;
  std::vector<DamagedRegion> damage;              // in file order; quarantine not set
  std::vector<std::pair<int64_t, int64_t>> kept;  // [from, to) byte ranges of intact records
};

// Hands every intact record of `data` (a segment's bytes) to `visitor`, and finds the damaged
// regions between them (see Recovery in log.h). `newest`: the segment is the log's last, whose
// damaged end is a torn tail. Returns the visitor's first error.
absl::StatusOr<SegmentScan> ScanSegment(SegmentId id, absl::string_view data, bool newest,
                                        int64_t max_record_bytes, const Log::Visitor& visitor) {
  SegmentScan scan;
  const int64_t size = static_cast<int64_t>(data.size());
  auto damaged = [&](int64_t from, int64_t to, std::string problem) {
    DamagedRegion region;
    region.segment = id;
    region.offset = from;
    region.bytes = to - from;
    region.torn_tail = newest && to == size;
    region.problem = std::move(problem);
    region.header_bytes = scan.v1 ? kHeaderSizeV1 : kHeaderSize;
    scan.damage.push_back(std::move(region));
  };
  if (size == 0) return scan;
  int64_t pos = kMagicSize;
  if (size < kMagicSize) {
    damaged(0, size, "torn segment header");
    return scan;
  }
  if (data.compare(0, kMagicSize, kMagicV1) == 0) {
    scan.v1 = true;
  } else if (data.compare(0, kMagicSize, kMagic) != 0) {
    // Perhaps only the magic was hit: look for records after it.
    pos = FindIntactFrame(data, kMagicSize, max_record_bytes);
    damaged(0, pos, "bad magic");
  }
  scan.intact_bytes = kMagicSize;
  const int64_t header = scan.v1 ? kHeaderSizeV1 : kHeaderSize;
  while (pos < size) {
    const Frame frame = ParseFrame(scan.v1, data, pos, max_record_bytes);
    if (frame.intact) {
      absl::string_view payload(data.data() + pos + header, static_cast<size_t>(frame.length));
      if (absl::Status s = visitor(id, payload); !s.ok()) return s;
      ++scan.records;
      const int64_t end = pos + header + frame.length;
      if (!scan.kept.empty() && scan.kept.back().second == pos) {
        scan.kept.back().second = end;
      } else {
        scan.kept.emplace_back(pos, end);
      }
      scan.intact_bytes += end - pos;
      pos = end;
      continue;
    }
    int64_t next = size;  // a v1 segment cannot be resynchronised
    if (!scan.v1) {
      // An intact header's length says where the next record starts; check it before searching.
      const int64_t after = frame.length >= 0 ? pos + header + frame.length : -1;
      if (after > pos && after < size &&
          ParseFrame(/*v1=*/false, data, after, max_record_bytes).intact) {
        next = after;
      } else if (after < size) {
        // The record's own bytes are skipped whole: its payload (client bytes) may hold
        // something that looks like a frame.
        next = FindIntactFrame(data, after > pos ? after : pos + 1, max_record_bytes);
      }
    }
    damaged(pos, next, frame.problem);
    pos = next;
  }
  return scan;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path);
  std::string data;
  char buf[1 << 16];
  while (true) {
    ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return ErrnoError("read", path);
    }
    if (r == 0) break;
    data.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  return data;
}

std::string SegmentFilePath(absl::string_view dir, SegmentId id) {
  return absl::StrFormat("%s/%s%020u%s", dir, kPrefix, id, kSuffix);
}

// Writes `data` to `path` (created or replaced) and fsyncs it.
absl::Status WriteDurably(const std::string& path, absl::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create", path);
  absl::Status s = WriteAll(fd, data.data(), data.size(), path);
  if (s.ok() && ::fsync(fd) != 0) s = ErrnoError("fsync", path);
  ::close(fd);
  return s;
}

// Copies one damaged region into DIR/damaged/ and makes the copy durable. Returns its path.
absl::StatusOr<std::string> Quarantine(const std::string& dir, const DamagedRegion& region,
                                       absl::string_view bytes) {
  const std::string damaged_dir = absl::StrCat(dir, "/", kDamagedDir);
  if (::mkdir(damaged_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError("create", damaged_dir);
  }
  const std::string path =
      absl::StrFormat("%s/%s%020u-at-%d.%s", damaged_dir, kPrefix, region.segment, region.offset,
                      region.torn_tail ? "torn" : "corrupt");
  if (absl::Status s = WriteDurably(path, bytes); !s.ok()) return s;
  if (absl::Status s = SyncDir(damaged_dir); !s.ok()) return s;
  if (absl::Status s = SyncDir(dir); !s.ok()) return s;
  return path;
}

// Cuts a segment back to its first `size` bytes, durably.
absl::Status CutSegment(const std::string& path, int64_t size) {
  if (::truncate(path.c_str(), size) != 0) return ErrnoError("truncate", path);
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return ErrnoError("fsync", path);
  return absl::OkStatus();
}

constexpr char kRepairPrefix[] = ".segment-";
constexpr char kRepairSuffix[] = ".repair";

// Replaces a segment with its magic and intact records (a temporary file renamed over it).
absl::Status RewriteSegment(const std::string& dir, SegmentId id, const std::string& path,
                            absl::string_view data, const SegmentScan& scan) {
  std::string repaired(scan.v1 ? kMagicV1 : kMagic, kMagicSize);
  for (const auto& [from, to] : scan.kept) {
    repaired.append(data.data() + from, static_cast<size_t>(to - from));
  }
  const std::string temp = absl::StrFormat("%s/%s%020u%s", dir, kRepairPrefix, id, kRepairSuffix);
  if (absl::Status s = WriteDurably(temp, repaired); !s.ok()) return s;
  if (::rename(temp.c_str(), path.c_str()) != 0) return ErrnoError("rename over", path);
  return SyncDir(dir);
}

// A crash during RewriteSegment leaves its temporary file (the segment itself is whole).
void RemoveRepairLeftovers(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(kRepairPrefix) && name.ends_with(kRepairSuffix)) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

// Adds what DIR/damaged/ holds to the report.
void CountQuarantine(const std::string& dir, RecoveryReport* report) {
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(absl::StrCat(dir, "/", kDamagedDir), ec)) {
    const std::string name = entry.path().filename().string();
    std::error_code size_ec;
    const auto size = entry.file_size(size_ec);
    if (size_ec) continue;
    if (name.ends_with(".torn")) report->quarantined_torn_bytes += static_cast<int64_t>(size);
    if (name.ends_with(".corrupt")) report->quarantined_corrupt_bytes += static_cast<int64_t>(size);
  }
}

// Records one region in `report`, with its warning.
void AddDamage(const std::string& path, DamagedRegion region, absl::string_view action,
               RecoveryReport* report) {
  std::string warning = absl::StrCat(
      "replay log ", path, ": ", region.torn_tail ? "torn tail" : "corrupt region", " (",
      region.problem, ") at offset ", region.offset, ", ", region.bytes, " bytes ", action);
  if (!region.quarantine.empty()) absl::StrAppend(&warning, "; copied to ", region.quarantine);
  report->warnings.push_back(std::move(warning));
  (region.torn_tail ? report->torn_bytes : report->corrupt_bytes) += region.bytes;
  report->damage.push_back(std::move(region));
}

}  // namespace

absl::Status LogOptions::Validate() const {
  if (dir.empty()) return absl::InvalidArgumentError("log dir must be set");
  if (segment_bytes < 1024) return absl::InvalidArgumentError("segment_bytes must be >= 1024");
  if (max_record_bytes < 1 || max_record_bytes > (int64_t{1} << 31)) {
    return absl::InvalidArgumentError("max_record_bytes must be in [1, 2^31]");
  }
  if (max_pending_bytes < max_record_bytes) {
    return absl::InvalidArgumentError("max_pending_bytes must be >= max_record_bytes");
  }
  if (clock == nullptr) return absl::InvalidArgumentError("clock must not be null");
  return absl::OkStatus();
}

Log::Log(const LogOptions& options) : options_(options) {
  if (options_.metrics != nullptr) {
    fsync_seconds_ = &prometheus::BuildHistogram()
                          .Name("zf_replay_fsync_seconds")
                          .Help("Time of one group commit's fdatasync.")
                          .Register(*options_.metrics)
                          .Add({}, metrics::ExponentialBuckets(1e-5, 2.0, 20));
    log_bytes_ = &prometheus::BuildGauge()
                      .Name("zf_replay_log_bytes")
                      .Help("Bytes of replay log segments on disk.")
                      .Register(*options_.metrics)
                      .Add({});
    written_bytes_ = &prometheus::BuildCounter()
                          .Name("zf_replay_log_written_bytes_total")
                          .Help("Bytes appended to the replay log.")
                          .Register(*options_.metrics)
                          .Add({});
    segment_count_ = &prometheus::BuildGauge()
                          .Name("zf_replay_log_segments")
                          .Help("Replay log segment files on disk.")
                          .Register(*options_.metrics)
                          .Add({});
    auto& write_errors = prometheus::BuildCounter()
                             .Name("zf_replay_log_write_errors_total")
                             .Help(
                                 "Replay log group commits that failed, by reason: disk_full "
                                 "(refused, retryable) or io (the shard must restart).")
                             .Register(*options_.metrics);
    write_errors_disk_full_ = &write_errors.Add({{"reason", "disk_full"}});
    write_errors_io_ = &write_errors.Add({{"reason", "io"}});
    auto& quarantined = prometheus::BuildGauge()
                            .Name("zf_replay_log_quarantined_bytes")
                            .Help(
                                "Damaged replay log bytes kept in DIR/damaged/ for inspection, "
                                "by kind: torn_tail (an interrupted write, never acknowledged) "
                                "or corrupt (acknowledged records damaged at rest).")
                            .Register(*options_.metrics);
    quarantined_torn_bytes_ = &quarantined.Add({{"kind", "torn_tail"}});
    quarantined_corrupt_bytes_ = &quarantined.Add({{"kind", "corrupt"}});
  }
}

std::string Log::SegmentPath(SegmentId id) const { return SegmentFilePath(options_.dir, id); }

absl::StatusOr<std::unique_ptr<Log>> Log::Open(const LogOptions& options, const Visitor& visitor,
                                               const DamageVisitor& damage) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  std::unique_ptr<Log> log(new Log(options));
  if (absl::Status s = log->Recover(visitor, damage); !s.ok()) return s;
  log->writer_.emplace("replay-log", [raw = log.get()] { raw->WriterLoop(); });
  return log;
}

absl::StatusOr<RecoveryReport> Log::Read(const std::string& dir, int64_t max_record_bytes,
                                         const Visitor& visitor, const DamageVisitor& damage) {
  absl::StatusOr<std::vector<SegmentId>> ids = ListSegments(dir);
  if (!ids.ok()) return ids.status();
  RecoveryReport report;
  for (SegmentId id : *ids) {
    const std::string path = SegmentFilePath(dir, id);
    auto data = ReadFile(path);
    if (!data.ok()) return data.status();
    ++report.segments;
    absl::StatusOr<SegmentScan> scan =
        ScanSegment(id, *data, /*newest=*/id == ids->back(), max_record_bytes, visitor);
    if (!scan.ok()) return scan.status();
    report.records += scan->records;
    report.bytes += scan->intact_bytes;
    for (DamagedRegion& region : scan->damage) {
      if (damage) damage(region, absl::string_view(*data).substr(region.offset, region.bytes));
      AddDamage(path, std::move(region), /*action=*/"not repaired", &report);
    }
  }
  CountQuarantine(dir, &report);
  return report;
}

absl::Status Log::Recover(const Visitor& visitor, const DamageVisitor& damage) {
  std::error_code ec;
  std::filesystem::create_directories(options_.dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("create ", options_.dir, ": ", ec.message()));
  absl::StatusOr<std::vector<SegmentId>> listed = ListSegments(options_.dir);
  if (!listed.ok()) return listed.status();
  const std::vector<SegmentId>& ids = *listed;

  std::vector<SegmentId> empty;
  for (SegmentId id : ids) {
    const std::string path = SegmentPath(id);
    auto data = ReadFile(path);
    if (!data.ok()) return data.status();
    ++recovery_.segments;
    absl::StatusOr<SegmentScan> scan =
        ScanSegment(id, *data, /*newest=*/id == ids.back(), options_.max_record_bytes, visitor);
    if (!scan.ok()) return scan.status();
    if (!scan->damage.empty()) {
      // The damaged bytes are copied aside (and durable) before the segment changes.
      for (DamagedRegion& region : scan->damage) {
        const absl::string_view bytes =
            absl::string_view(*data).substr(region.offset, region.bytes);
        absl::StatusOr<std::string> copy = Quarantine(options_.dir, region, bytes);
        if (!copy.ok()) return copy.status();
        region.quarantine = *copy;
        if (damage) damage(region, bytes);
      }
      const bool only_tail =
          scan->damage.size() == 1 &&
          scan->damage[0].offset + scan->damage[0].bytes == static_cast<int64_t>(data->size()) &&
          scan->damage[0].offset >= kMagicSize;
      absl::Status repaired = only_tail ? CutSegment(path, scan->damage[0].offset)
                                        : RewriteSegment(options_.dir, id, path, *data, *scan);
      if (!repaired.ok()) return repaired;
      for (DamagedRegion& region : scan->damage) {
        AddDamage(path, std::move(region), only_tail ? "cut off" : "removed", &recovery_);
        ZF_LOG(WARNING) << recovery_.warnings.back();
      }
    }
    recovery_.records += scan->records;
    recovery_.bytes += scan->intact_bytes;
    absl::MutexLock lock(&mu_);
    segments_[id] = Segment{scan->records, scan->intact_bytes};
    if (scan->records == 0) empty.push_back(id);
  }
  for (SegmentId id : empty) DeleteSegmentFile(id);
  RemoveRepairLeftovers(options_.dir);
  CountQuarantine(options_.dir, &recovery_);
  if (quarantined_torn_bytes_ != nullptr) {
    quarantined_torn_bytes_->Set(static_cast<double>(recovery_.quarantined_torn_bytes));
    quarantined_corrupt_bytes_->Set(static_cast<double>(recovery_.quarantined_corrupt_bytes));
  }
  const SegmentId next = ids.empty() ? 1 : ids.back() + 1;
  return StartSegment(next);
}

absl::Status Log::StartSegment(SegmentId id) {
  const std::string path = SegmentPath(id);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create", path);
  // On failure the half-made file goes (a full disk leaves the log as it was, still usable).
  auto fail = [&](absl::Status s) {
    ::close(fd);
    ::unlink(path.c_str());
    return s;
  };
  if (absl::Status s = WriteAll(fd, kMagic, kMagicSize, path); !s.ok()) return fail(s);
  if (::fdatasync(fd) != 0) return fail(ErrnoError("fdatasync", path));
  if (absl::Status s = SyncDir(options_.dir); !s.ok()) return fail(s);
  SegmentId previous = 0;
  bool previous_dead = false;
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  previous = active_;
  active_ = id;
  active_bytes_ = kMagicSize;
  {
    absl::MutexLock lock(&mu_);
    segments_[id] = Segment{0, kMagicSize};
    if (previous != 0) {
      auto it = segments_.find(previous);
      previous_dead = it != segments_.end() && it->second.live == 0;
    }
    active_id_ = id;
  }
  if (previous_dead) DeleteSegmentFile(previous);
  if (log_bytes_ != nullptr) log_bytes_->Set(static_cast<double>(bytes_on_disk()));
  if (segment_count_ != nullptr) segment_count_->Set(static_cast<double>(segments().size()));
  return absl::OkStatus();
}

void Log::DeleteSegmentFile(SegmentId id) {
  const std::string path = SegmentPath(id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    ZF_LOG(ERROR) << "replay log: cannot delete dead segment " << path << ": "
                  << std::strerror(errno);
    return;
  }
  size_t remaining;
  {
    absl::MutexLock lock(&mu_);
    segments_.erase(id);
    remaining = segments_.size();
  }
  if (log_bytes_ != nullptr) log_bytes_->Set(static_cast<double>(bytes_on_disk()));
  if (segment_count_ != nullptr) segment_count_->Set(static_cast<double>(remaining));
}

Log::~Log() {
  Close();
  if (fd_ >= 0) ::close(fd_);
}

void Log::Close() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  if (writer_.has_value()) writer_->Join();
}

void Log::AppendAsync(std::string payload, AppendCallback done) {
  const int64_t size = static_cast<int64_t>(payload.size());
  if (size < 1 || size > options_.max_record_bytes) {
    done(absl::InvalidArgumentError(
        absl::StrCat("log record of ", size, " bytes; must be 1..", options_.max_record_bytes)));
    return;
  }
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    if (closing_) {
      refused = absl::CancelledError("replay log closed");
    } else if (failed_) {
      refused = absl::UnavailableError("replay log failed earlier; restart the shard");
    } else if (queued_bytes_ + size > options_.max_pending_bytes) {
      refused = absl::ResourceExhaustedError(
          absl::StrCat("replay log has ", queued_bytes_, " bytes waiting for disk"));
    } else {
      queued_bytes_ += size;
      queue_.push_back(Pending{std::move(payload), std::move(done)});
      return;
    }
  }
  done(refused);
}

absl::StatusOr<SegmentId> Log::Append(std::string payload) {
  absl::Notification notification;
  absl::StatusOr<SegmentId> result;
  AppendAsync(std::move(payload), [&](absl::StatusOr<SegmentId> r) {
    result = std::move(r);
    notification.Notify();
  });
  notification.WaitForNotification();
  return result;
}

void Log::Release(SegmentId segment) {
  bool dead = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = segments_.find(segment);
    if (it == segments_.end()) return;
    ZF_CHECK(it->second.live > 0) << "Release of segment " << segment << " with no live records";
    --it->second.live;
    dead = it->second.live == 0 && segment != active_id_;
  }
  if (dead) DeleteSegmentFile(segment);
}

std::vector<SegmentId> Log::segments() const {
  absl::MutexLock lock(&mu_);
  std::vector<SegmentId> ids;
  for (const auto& [id, s] : segments_) ids.push_back(id);
  return ids;
}

int64_t Log::bytes_on_disk() const {
  absl::MutexLock lock(&mu_);
  int64_t total = 0;
  for (const auto& [id, s] : segments_) total += s.bytes;
  return total;
}

absl::Status Log::WriteGroup(std::vector<Pending>& group, std::vector<SegmentId>* where) {
  std::string buffer;
  int64_t records_in_buffer = 0;
  // Records become live as soon as they are durable, before a roll can judge their segment dead;
  // only then are they in `where`.
  auto flush = [&]() -> absl::Status {
    if (buffer.empty()) return absl::OkStatus();
    const std::string path = SegmentPath(active_);
    absl::Status written = WriteAll(fd_, buffer.data(), buffer.size(), path);
    const absl::Time start = options_.clock->Now();
    if (written.ok() && ::fdatasync(fd_) != 0) written = ErrnoError("fdatasync", path);
    if (!written.ok()) {
      if (absl::IsResourceExhausted(written)) {
        // Disk full: cut the segment back to its last durable byte so the bytes that did get
        // written are never read as records, and keep the log usable for when space is freed.
        if (::ftruncate(fd_, active_bytes_) != 0 ||
            ::lseek(fd_, active_bytes_, SEEK_SET) != active_bytes_ || ::fdatasync(fd_) != 0) {
          return absl::InternalError(absl::StrCat(
              written.message(), "; cutting the segment back failed: ", std::strerror(errno)));
        }
      }
      return written;
    }
    if (fsync_seconds_ != nullptr) {
      fsync_seconds_->Observe(absl::ToDoubleSeconds(options_.clock->Now() - start));
    }
    if (written_bytes_ != nullptr) written_bytes_->Increment(static_cast<double>(buffer.size()));
    active_bytes_ += static_cast<int64_t>(buffer.size());
    {
      absl::MutexLock lock(&mu_);
      Segment& segment = segments_[active_];
      segment.bytes = active_bytes_;
      segment.live += records_in_buffer;
    }
    where->insert(where->end(), records_in_buffer, active_);
    buffer.clear();
    records_in_buffer = 0;
    return absl::OkStatus();
  };
  for (Pending& p : group) {
    const int64_t frame = kHeaderSize + static_cast<int64_t>(p.payload.size());
    const int64_t in_segment = active_bytes_ + static_cast<int64_t>(buffer.size());
    if (in_segment > kMagicSize && in_segment + frame > options_.segment_bytes) {
      if (absl::Status s = flush(); !s.ok()) return s;
      if (absl::Status s = StartSegment(active_ + 1); !s.ok()) return s;
    }
    char header[kHeaderSize];
    std::memcpy(header, kSync, kSyncSize);
    PutU32(header + kSyncSize, static_cast<uint32_t>(p.payload.size()));
    PutU32(header + kSyncSize + 4, Crc(p.payload));
    PutU32(header + 12, Crc(absl::string_view(header, 12)));
    buffer.append(header, kHeaderSize);
    buffer.append(p.payload);
    ++records_in_buffer;
  }
  if (absl::Status s = flush(); !s.ok()) return s;
  if (log_bytes_ != nullptr) log_bytes_->Set(static_cast<double>(bytes_on_disk()));
  return absl::OkStatus();
}

void Log::WriterLoop() {
  while (true) {
    std::vector<Pending> group;
    bool failed;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closing_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // closing, and everything queued is done
      while (!queue_.empty()) {
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      queued_bytes_ = 0;
      failed = failed_;
    }
    absl::Status status =
        failed ? absl::UnavailableError("replay log failed earlier; restart the shard")
               : absl::OkStatus();
    std::vector<SegmentId> where;  // the segment of each durable record, a prefix of group
    if (status.ok()) {
      status = WriteGroup(group, &where);
      if (absl::IsResourceExhausted(status)) {
        // The disk is full; the segment was cut back, so later appends may succeed.
        if (!disk_full_) ZF_LOG(WARNING) << "replay log: refusing appends: " << status;
        disk_full_ = true;
        if (write_errors_disk_full_ != nullptr) write_errors_disk_full_->Increment();
        status = absl::ResourceExhaustedError(
            absl::StrCat("replay log: disk full, nothing stored: ", status.message()));
      } else if (!status.ok()) {
        disk_full_ = false;
        ZF_LOG(ERROR) << "replay log write failed; refusing further appends: " << status;
        if (write_errors_io_ != nullptr) write_errors_io_->Increment();
        status =
            absl::UnavailableError(absl::StrCat("replay log write failed: ", status.message()));
        absl::MutexLock lock(&mu_);
        failed_ = true;
      }
    }
    if (status.ok() && disk_full_) {
      ZF_LOG(INFO) << "replay log: appends succeed again after a full disk";
      disk_full_ = false;
    }
    for (size_t i = 0; i < group.size(); ++i) {
      if (i < where.size()) {
        group[i].done(where[i]);
      } else {
        group[i].done(status);
      }
    }
  }
}

}  // namespace zf::replay
