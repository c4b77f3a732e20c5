// The replay shard's durable log: append-only segment files with checksummed records and group
// commit.
//
// Layout. A directory of segment files "segment-<20-digit id>.zlog", ids increasing. Each file
// starts with an 8-byte magic, then records. Segments written today start "ZFRLOG02", and each
// record is framed as
//   [sync "ZFRM"][u32 payload length][u32 crc32 of the payload][u32 crc32 of the first 12 bytes]
//   [payload]
// (integers little-endian, zlib's crc32). The header has a checksum of its own, so a length is
// trusted only when it is intact, and the sync bytes let recovery find the next record after a
// damaged one. Segments "ZFRLOG01" (written before 2026-12) frame a record as [u32 length][u32
// crc32 of the payload][payload]: they are read, never written, and cannot be resynchronised.
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
// A bad frame (a short header or payload, a header or payload checksum that fails, a length over
// max_record_bytes, a bad magic) starts a damaged region, which ends at the next intact record:
// the first place where sync bytes begin an intact record, searched from the end of the bad
// record when its header is intact (its payload, a client's bytes, is never searched) and from
// the next byte otherwise (a ZFRLOG01 segment: its end). So one bad record costs that record,
// and every intact record after it is kept. A region is
//   - a torn tail when it ends the newest segment: the write a crash interrupted, which was never
//     acknowledged (a group is acknowledged only after its fdatasync);
//   - corrupt anywhere else (a closed segment, or followed by intact records): bytes that were
//     durable and acknowledged, then damaged at rest (a bad sector, a bit flip, a stray write).
// Damaged bytes are never thrown away: each region is copied into DIR/damaged/ as
// "segment-<id>-at-<offset>.<torn|corrupt>" (fsynced) before the segment is repaired: cut short
// when its only region is its tail, else rewritten (a temporary ".segment-<id>.repair" renamed
// over it) with its intact records in order. Each region is logged as a WARNING, reported in
// recovery(), shown to the DamageVisitor with its bytes, and the bytes kept in DIR/damaged/ are
// in zf_replay_log_quarantined_bytes{kind} until an operator removes them. A repaired segment
// reads clean, so a restart reports the damage once. New appends always go to a fresh segment.
// A damaged region is found again only where its record's sync bytes or a later one's survive;
// damage inside an unsynced tail that leaves a later record of the same group intact reads as
// corrupt (the log cannot tell how far the last fdatasync reached).
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
// Read() lists a log's intact records and damaged regions without opening it for writing (no
// repair, no copy, no new segment): for tools that check what a shard holds, e.g. `zf replay ls`
// and `zf replay verify`.
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
#include "common/thread.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::replay {

using SegmentId = uint64_t;

struct LogOptions {
  std::string dir;                          // created if missing
  int64_t segment_bytes = 64 << 20;         // roll before a segment grows past this
  int64_t max_record_bytes = 64 << 20;      // larger payloads are refused (and, on read, corrupt)
  int64_t max_pending_bytes = 256 << 20;    // queued, not yet written; beyond: ResourceExhausted
  prometheus::Registry* metrics = nullptr;  // zf_replay_fsync_seconds, zf_replay_log_*; may be null
  Clock* clock = RealClock();               // times fsyncs for the histogram

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

// One run of bad bytes in a segment (see Recovery).
struct DamagedRegion {
  SegmentId segment = 0;
  int64_t offset = 0;  // from the start of the segment file; a frame boundary
  int64_t bytes = 0;
  bool torn_tail = false;  // the end of the newest segment (never acknowledged); else corrupt
  std::string problem;     // what was wrong with its first frame, e.g. "checksum mismatch"
  std::string quarantine;  // Open: the copy's path in DIR/damaged/; Read: empty
  // The frame's header size in this segment's format: the payload, if its header is intact,
  // starts this many bytes into the region.
  int64_t header_bytes = 0;
};

struct RecoveryReport {
  int64_t segments = 0;               // segment files read
  int64_t records = 0;                // intact records handed to the visitor
  int64_t bytes = 0;                  // bytes kept (magics and intact records)
  int64_t torn_bytes = 0;             // bytes of torn tails (never acknowledged)
  int64_t corrupt_bytes = 0;          // bytes of corrupt regions (acknowledged, then damaged)
  std::vector<DamagedRegion> damage;  // in log order
  std::vector<std::string> warnings;  // one per damaged region
  // What DIR/damaged/ holds after this Open or Read (earlier starts' copies included).
  int64_t quarantined_torn_bytes = 0;
  int64_t quarantined_corrupt_bytes = 0;
};

class Log {
 public:
  // Called once per intact record during Open, in log order. An error aborts Open with it.
  using Visitor = std::function<absl::Status(SegmentId segment, absl::string_view payload)>;
  // Called once per damaged region during Open or Read, in log order with the records, with the
  // region's bytes (e.g. to read what can still be read of the lost record). May be null.
  using DamageVisitor = std::function<void(const DamagedRegion& region, absl::string_view bytes)>;
  // Called once per append, on the writer thread (or at once on the caller's for a refused
  // append), after the record is durable: with the segment that holds it, or an error. It must not
  // block; it may call Release.
  using AppendCallback = std::function<void(absl::StatusOr<SegmentId>)>;

  // Opens (creating if needed) the log in options.dir, replays it into `visitor` (see Recovery),
  // moves damaged bytes aside and repairs their segments, and starts the writer thread. Blocks on
  // disk I/O.
  // Returns: the log; InvalidArgument (options); Internal (the directory or a segment cannot be
  // read, listed, repaired or created, or a damaged region cannot be copied aside: an errno
  // message; nothing is repaired before its bytes are safe); or the visitor's error.
  static absl::StatusOr<std::unique_ptr<Log>> Open(const LogOptions& options,
                                                   const Visitor& visitor,
                                                   const DamageVisitor& damage = nullptr);

  // Hands every intact record in `dir` to `visitor` and every damaged region to `damage`, in log
  // order, changing nothing on disk. Safe while a shard writes the log (a record being written
  // reads as a torn tail).
  // Returns: what was read; Internal (the directory or a segment cannot be read); or the
  // visitor's error.
  static absl::StatusOr<RecoveryReport> Read(const std::string& dir, int64_t max_record_bytes,
                                             const Visitor& visitor,
                                             const DamageVisitor& damage = nullptr);

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
  absl::Status Recover(const Visitor& visitor, const DamageVisitor& damage);
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

  prometheus::Histogram* fsync_seconds_ = nullptr;
  prometheus::Gauge* log_bytes_ = nullptr;
  prometheus::Counter* written_bytes_ = nullptr;
  prometheus::Gauge* segment_count_ = nullptr;
  prometheus::Counter* write_errors_disk_full_ = nullptr;
  prometheus::Counter* write_errors_io_ = nullptr;
  prometheus::Gauge* quarantined_torn_bytes_ = nullptr;
  prometheus::Gauge* quarantined_corrupt_bytes_ = nullptr;

  std::optional<Thread> writer_;  // last: started after everything above, joined first
};

}  // namespace zf::replay
