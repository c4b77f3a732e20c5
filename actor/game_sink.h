// Where an actor's finished games go.
//
//   GameSink          the interface (thread-safe): Put one game, Flush, Close.
//   FileGameSink      appends records to files in a run directory; ReadGameFile reads them back
//                     (`zf games dump FILE`).
//   ReplayGameSink    hands games to a replay::ShardedReplayWriter (the network sink).
//
// File format (*.zfgames): a sequence of records, each
//   uint32 little-endian payload length | uint32 little-endian CRC-32 (zlib) of the payload |
//   payload = a serialized zerofleet.v1.GameRecord.
// A record is written with one write(2) under the sink's lock, so a file holds whole records
// except possibly a torn tail when the process dies mid-write; ReadGameFile reports such a tail
// (and reads every record before it) rather than failing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/zerofleet/v1/replay.pb.h"
#include "replay/client/sharded_writer.h"

namespace zf::actor {

// Thread-safe: Put, Flush and Close may be called from any thread at once.
class GameSink {
 public:
  virtual ~GameSink() = default;
  // Accepts one finished game. May block (a full network sink) until `deadline`.
  // Returns: OK (the game is accepted whole); DeadlineExceeded; Cancelled (closed); another
  // error of the sink (Internal for an I/O error).
  virtual absl::Status Put(zerofleet::v1::GameRecord game, absl::Time deadline) = 0;
  // Blocks until every accepted game is durable (on disk / acknowledged), until `deadline`.
  // Returns: OK; DeadlineExceeded; Cancelled; Internal (I/O).
  virtual absl::Status Flush(absl::Time deadline) = 0;
  // Flushes what it can and stops accepting games. Idempotent.
  virtual void Close() = 0;
};

struct FileGameSinkOptions {
  // The run directory; created (with parents) if missing. Required.
  std::string dir;
  // Files are DIR/games-<actor_id>-<n>.zfgames, n = 0, 1, ... (the first n not already taken,
  // so a restarted actor never overwrites a file). Non-empty, [A-Za-z0-9_.-] only.
  std::string actor_id = "actor";
  // A new file is started once the current one holds at least this many bytes. >= 1.
  int64_t max_file_bytes = int64_t{64} << 20;

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

// Thread-safe. Owns its open file; the destructor closes it.
class FileGameSink final : public GameSink {
 public:
  // Creates the directory and opens the first file.
  // Returns: the sink; InvalidArgument (options); Internal (the directory or file cannot be
  // created).
  static absl::StatusOr<std::unique_ptr<FileGameSink>> Create(FileGameSinkOptions options);
  ~FileGameSink() override;

  // Appends the record (one write). Never blocks on anything but the disk.
  // Returns: OK; Cancelled after Close; Internal for an I/O error.
  absl::Status Put(zerofleet::v1::GameRecord game, absl::Time deadline) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // fsyncs the current file. Returns: OK; Cancelled after Close; Internal.
  absl::Status Flush(absl::Time deadline) override ABSL_LOCKS_EXCLUDED(mu_);
  void Close() override ABSL_LOCKS_EXCLUDED(mu_);

  // Every file this sink has written to, in order.
  std::vector<std::string> files() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t games_written() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit FileGameSink(FileGameSinkOptions options) : options_(std::move(options)) {}
  absl::Status OpenNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const FileGameSinkOptions options_;
  mutable absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t file_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int next_index_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t games_written_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> files_ ABSL_GUARDED_BY(mu_);
};

// The contents of one .zfgames file.
struct GameFile {
  std::vector<zerofleet::v1::GameRecord> games;
  // Bytes of whole, valid records.
  int64_t valid_bytes = 0;
  // Empty, or a description of an incomplete last record ("torn tail: 17 bytes after record 3
  // (header says 4123)"): the writer died mid-write; the records before it are intact.
  std::string torn_tail;
};

// Reads a .zfgames file.
// Returns: the games; NotFound (no such file); DataLoss (a complete record whose CRC does not
// match or that does not parse, naming its index and offset); Internal (I/O).
absl::StatusOr<GameFile> ReadGameFile(const std::string& path);

// GameSink over a ShardedReplayWriter (which it owns). Thread-safe.
class ReplayGameSink final : public GameSink {
 public:
  explicit ReplayGameSink(std::unique_ptr<replay::ShardedReplayWriter> writer)
      : writer_(std::move(writer)) {}
  // ShardedReplayWriter::Write: blocks while the writer's memory is full and no spool takes the
  // game. Returns its codes (OK, InvalidArgument, DeadlineExceeded, Cancelled, Internal).
  absl::Status Put(zerofleet::v1::GameRecord game, absl::Time deadline) override {
    return writer_->Write(std::move(game), deadline);
  }
  // Waits until every game is acknowledged by a shard (or DeadlineExceeded / Cancelled).
  absl::Status Flush(absl::Time deadline) override { return writer_->Flush(deadline); }
  void Close() override { writer_->Close(); }
  replay::ShardedReplayWriter& writer() { return *writer_; }

 private:
  std::unique_ptr<replay::ShardedReplayWriter> writer_;
};

}  // namespace zf::actor
