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

namespace zf::replay {
namespace {

constexpr char kMagic[] = "ZFRLOG01";
constexpr int64_t kMagicSize = 8;
constexpr int64_t kHeaderSize = 8;
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

// What one segment file holds: its intact prefix and, if the rest is bad, why.
struct SegmentScan {
  int64_t intact_bytes = 0;  // magic + intact records
  int64_t records = 0;
  std::string problem;  // empty when the whole file is intact
};

// Hands every intact record of `data` (a segment's bytes) to `visitor`, stopping at the first
// bad frame. Returns the visitor's first error.
absl::StatusOr<SegmentScan> ScanSegment(SegmentId id, const std::string& data,
                                        int64_t max_record_bytes, const Log::Visitor& visitor) {
  SegmentScan scan;
  if (data.size() < kMagicSize) {
    if (!data.empty()) scan.problem = "torn segment header";
    return scan;
  }
  if (data.compare(0, kMagicSize, kMagic) != 0) {
    scan.problem = "bad magic";
    return scan;
  }
  int64_t pos = kMagicSize;
  const int64_t size = static_cast<int64_t>(data.size());
  while (pos < size) {
    if (size - pos < kHeaderSize) {
      scan.problem = "torn record header";
      break;
    }
    const int64_t len = GetU32(data.data() + pos);
    const uint32_t crc = GetU32(data.data() + pos + 4);
    if (len < 1 || len > max_record_bytes) {
      scan.problem = absl::StrCat("bad record length ", len);
      break;
    }
    if (size - pos - kHeaderSize < len) {
      scan.problem = "torn record payload";
      break;
    }
    absl::string_view payload(data.data() + pos + kHeaderSize, static_cast<size_t>(len));
    if (Crc(payload) != crc) {
      scan.problem = "checksum mismatch";
      break;
    }
    if (absl::Status s = visitor(id, payload); !s.ok()) return s;
    ++scan.records;
    pos += kHeaderSize + len;
  }
  scan.intact_bytes = pos;
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
    fsync_seconds_ = &metrics::BuildHistogram()
                          .Name("zf_replay_fsync_seconds")
                          .Help("Time of one group commit's fdatasync.")
                          .Register(*options_.metrics)
                          .Add({}, metrics::ExponentialBuckets(1e-5, 2.0, 20));
    log_bytes_ = &metrics::BuildGauge()
                      .Name("zf_replay_log_bytes")
                      .Help("Bytes of replay log segments on disk.")
                      .Register(*options_.metrics)
                      .Add({});
    written_bytes_ = &metrics::BuildCounter()
                          .Name("zf_replay_log_written_bytes_total")
                          .Help("Bytes appended to the replay log.")
                          .Register(*options_.metrics)
                          .Add({});
    segment_count_ = &metrics::BuildGauge()
                          .Name("zf_replay_log_segments")
                          .Help("Replay log segment files on disk.")
                          .Register(*options_.metrics)
                          .Add({});
    auto& write_errors = metrics::BuildCounter()
                             .Name("zf_replay_log_write_errors_total")
                             .Help(
                                 "Replay log group commits that failed, by reason: disk_full "
                                 "(refused, retryable) or io (the shard must restart).")
                             .Register(*options_.metrics);
    write_errors_disk_full_ = &write_errors.Add({{"reason", "disk_full"}});
    write_errors_io_ = &write_errors.Add({{"reason", "io"}});
  }
}

std::string Log::SegmentPath(SegmentId id) const {
  return absl::StrFormat("%s/%s%020u%s", options_.dir, kPrefix, id, kSuffix);
}

absl::StatusOr<std::unique_ptr<Log>> Log::Open(const LogOptions& options, const Visitor& visitor) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  std::unique_ptr<Log> log(new Log(options));
  if (absl::Status s = log->Recover(visitor); !s.ok()) return s;
  log->writer_.emplace("replay-log", [raw = log.get()] { raw->WriterLoop(); });
  return log;
}

absl::StatusOr<RecoveryReport> Log::Read(const std::string& dir, int64_t max_record_bytes,
                                         const Visitor& visitor) {
  absl::StatusOr<std::vector<SegmentId>> ids = ListSegments(dir);
  if (!ids.ok()) return ids.status();
  RecoveryReport report;
  for (SegmentId id : *ids) {
    const std::string path = absl::StrFormat("%s/%s%020u%s", dir, kPrefix, id, kSuffix);
    auto data = ReadFile(path);
    if (!data.ok()) return data.status();
    ++report.segments;
    absl::StatusOr<SegmentScan> scan = ScanSegment(id, *data, max_record_bytes, visitor);
    if (!scan.ok()) return scan.status();
    report.records += scan->records;
    report.bytes += scan->intact_bytes;
    if (!scan->problem.empty()) {
      const int64_t unread = static_cast<int64_t>(data->size()) - scan->intact_bytes;
      report.discarded_bytes += unread;
      report.warnings.push_back(absl::StrCat(path, ": ", scan->problem, " at offset ",
                                             scan->intact_bytes, "; ", unread, " bytes not read"));
    }
  }
  return report;
}

absl::Status Log::Recover(const Visitor& visitor) {
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
    absl::StatusOr<SegmentScan> scan = ScanSegment(id, *data, options_.max_record_bytes, visitor);
    if (!scan.ok()) return scan.status();
    const int64_t pos = scan->intact_bytes;
    const int64_t records = scan->records;
    const std::string& problem = scan->problem;
    if (!problem.empty()) {
      const int64_t discarded = static_cast<int64_t>(data->size()) - pos;
      std::string warning =
          absl::StrCat("replay log ", path, ": ", problem, " at offset ", pos, "; discarding ",
                       discarded, " bytes after ", records, " intact records");
      ZF_LOG(WARNING) << warning;
      recovery_.warnings.push_back(std::move(warning));
      recovery_.discarded_bytes += discarded;
      if (::truncate(path.c_str(), pos) != 0) return ErrnoError("truncate", path);
      int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return ErrnoError("open", path);
      const int rc = ::fsync(fd);
      ::close(fd);
      if (rc != 0) return ErrnoError("fsync", path);
    }
    recovery_.records += records;
    recovery_.bytes += pos;
    absl::MutexLock lock(&mu_);
    segments_[id] = Segment{records, pos};
    if (records == 0) empty.push_back(id);
  }
  for (SegmentId id : empty) DeleteSegmentFile(id);
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
    PutU32(header, static_cast<uint32_t>(p.payload.size()));
    PutU32(header + 4, Crc(p.payload));
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
