// The replay shard's durable log: append-only segment files with checksummed records and group
// commit.
//
// Layout. A directory of segment files "segment-<20-digit id>.zlog", ids increasing. Each file
// starts with the 8-byte magic "ZFRLOG01", then records, each framed as
//   [uint32 little-endian payload length][uint32 little-endian zlib crc32 of the payload][payload]
// The payload is opaque here (the shard writes a serialized zerofleet.v1.GameRecord).
//
// Group commit. Appends are queued to one writer thread, which takes everything queued, writes it
// with one write() per segment touched and makes it durable with one fdatasync() (plus an fsync of
// the directory when it created a segment), then completes every append in the group. So one
// fsync covers many records, and AppendAsync never blocks its caller: the gRPC service can finish
// its reactor from the completion callback instead of parking a thread per request. A segment is
// rolled (closed, a new one started) before a record that would take it past segment_bytes.
//
// Recovery. Open() reads every segment in id order and hands each intact record to a visitor.
// At the first bad frame of a segment (a torn tail: a short header or payload; or corruption: a
// length over max_record_bytes, a checksum mismatch, a bad magic) it logs a WARNING, truncates the
// segment there (so the bytes are gone for good and never misread later) and moves on to the next
// segment. New appends always go to a fresh segment. What was recovered and discarded is in
// recovery().
//
// Segment deletion. The log counts, per segment, the records still live: every recovered or
// appended record starts live; the owner calls Release(segment) when one of its records is no
// longer needed (its game was evicted, or it was a duplicate). A segment that is not the one being
// written and has no live record is deleted.
//
// Errors. A full disk (ENOSPC or EDQUOT from a write or fdatasync) completes the records of the
// group that were not yet durable with ResourceExhausted, cuts the active segment back to its
// last durable byte, and keeps the log open: appends succeed again once space is freed (counted
// in zf_replay_log_write_errors_total{reason="disk_full"}). Any other write or fsync failure
// completes that group and every later append with Unavailable (the log's state on disk is
// unknown; nothing that failed was acknowledged); the shard must be restarted, which recovers
// everything that was durable (reason="io").
//
// Read() lists a log's intact records without opening it for writing (no truncation, no new
// segment): for tools that check what a shard holds, e.g. `zf replay ls`.
//
// Thread-safe. Owns its writer thread, joined by Close() / the destructor.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/metrics/registry.h"
#include "common/thread.h"

namespace zf::replay {

using SegmentId = uint64_t;

struct LogOptions {
  std::string dir;                        // created if missing
  int64_t segment_bytes = 64 << 20;       // roll before a segment grows past this
  int64_t max_record_bytes = 64 << 20;    // larger payloads are refused (and, on read, corrupt)
  int64_t max_pending_bytes = 256 << 20;  // queued, not yet written; beyond: ResourceExhausted
  metrics::Registry* metrics = nullptr;   // zf_replay_fsync_seconds, zf_replay_log_*; may be null
  Clock* clock = RealClock();             // times fsyncs for the histogram

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

struct RecoveryReport {
  int64_t segments = 0;               // segment files read
  int64_t records = 0;                // intact records handed to the visitor
  int64_t bytes = 0;                  // bytes kept
  int64_t discarded_bytes = 0;        // bytes of torn or corrupt tails truncated away
  std::vector<std::string> warnings;  // one per truncated segment
};

class Log {
 public:
  // Called once per intact record during Open, in log order. An error aborts Open with it.
  using Visitor = std::function<absl::Status(SegmentId segment, absl::string_view payload)>;
  // Called once per append, on the writer thread (or at once on the caller's for a refused
  // append), after the record is durable: with the segment that holds it, or an error. It must not
  // block; it may call Release.
  using AppendCallback = std::function<void(absl::StatusOr<SegmentId>)>;

  // Opens (creating if needed) the log in options.dir, replays it into `visitor` (see Recovery)
  // and starts the writer thread. Blocks on disk I/O.
  // Returns: the log; InvalidArgument (options); Internal (the directory or a segment cannot be
  // read, listed, truncated or created: an errno message); or the visitor's error.
  static absl::StatusOr<std::unique_ptr<Log>> Open(const LogOptions& options,
                                                   const Visitor& visitor);

  // Hands every intact record in `dir` to `visitor`, in log order, changing nothing on disk. A bad
  // frame ends its segment's records and is reported in the warnings, not repaired. Safe while a
  // shard writes the log (a record being written reads as a torn tail).
  // Returns: what was read; Internal (the directory or a segment cannot be read); or the
  // visitor's error.
  static absl::StatusOr<RecoveryReport> Read(const std::string& dir, int64_t max_record_bytes,
                                             const Visitor& visitor);

  ~Log();  // Close()
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Queues `payload` and returns at once; `done` runs once it is durable (see AppendCallback).
  // `done` receives: the SegmentId; InvalidArgument (payload empty or over max_record_bytes);
  // ResourceExhausted (max_pending_bytes queued: back-pressure, retry later); Cancelled (closed);
  // Unavailable (a write or fsync failed).
  void AppendAsync(std::string payload, AppendCallback done) ABSL_LOCKS_EXCLUDED(mu_);

  // AppendAsync, blocking the caller until `done` would run. Same statuses.
  absl::StatusOr<SegmentId> Append(std::string payload) ABSL_LOCKS_EXCLUDED(mu_);

  // One record of `segment` is no longer needed; deletes the segment's file if it was the last
  // live one and the segment is not being written. Never blocks except on that unlink.
  void Release(SegmentId segment) ABSL_LOCKS_EXCLUDED(mu_);

  // Completes what is queued, stops the writer and joins it; later appends get Cancelled.
  // Idempotent. Blocks until the queued appends are durable.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  const RecoveryReport& recovery() const { return recovery_; }
  // Segment ids with a file on disk, in order (the active one included).
  std::vector<SegmentId> segments() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t bytes_on_disk() const ABSL_LOCKS_EXCLUDED(mu_);
  std::string SegmentPath(SegmentId id) const;

 private:
  struct Pending {
    std::string payload;
    AppendCallback done;
  };
  struct Segment {
    int64_t live = 0;
    int64_t bytes = 0;
  };

  explicit Log(const LogOptions& options);
  absl::Status Recover(const Visitor& visitor);
  // Creates segment `id` with its magic and makes it the active one (writer thread or Open).
  absl::Status StartSegment(SegmentId id) ABSL_LOCKS_EXCLUDED(mu_);
  void WriterLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes and syncs one group. `where` receives the segment of each record made durable, a
  // prefix of `group` (all of it on success); the status says why the rest failed.
  absl::Status WriteGroup(std::vector<Pending>& group, std::vector<SegmentId>* where)
      ABSL_LOCKS_EXCLUDED(mu_);
  void DeleteSegmentFile(SegmentId id);

  const LogOptions options_;
  RecoveryReport recovery_;
  // Writer-thread state (and Open's, before the thread starts).
  int fd_ = -1;  // the active segment
  SegmentId active_ = 0;
  int64_t active_bytes_ = 0;
  bool disk_full_ = false;  // the last group was refused for a full disk

  mutable absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  int64_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<SegmentId, Segment> segments_ ABSL_GUARDED_BY(mu_);
  SegmentId active_id_ ABSL_GUARDED_BY(mu_) = 0;  // mirror of active_ for Release

  metrics::Histogram* fsync_seconds_ = nullptr;
  metrics::Gauge* log_bytes_ = nullptr;
  metrics::Counter* written_bytes_ = nullptr;
  metrics::Gauge* segment_count_ = nullptr;
  metrics::Counter* write_errors_disk_full_ = nullptr;
  metrics::Counter* write_errors_io_ = nullptr;

  std::optional<Thread> writer_;  // last: started after everything above, joined first
};

}  // namespace zf::replay
