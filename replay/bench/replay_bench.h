// Replay shard benchmark: durable insert and sample throughput of one in-process Shard with
// Connect Four-shaped records, and its resident memory per stored position at full capacity.
// Run by `zf bench replay` (cli/commands/bench_commands.cc); speed is never asserted in tests.
//
// Insert: K threads call Shard::Insert (each acknowledged only after the log's group commit, one
// fdatasync per group) until 2x capacity positions are stored, so the second half runs with a
// full window (evicting and deleting segments). Sample: one thread calls Shard::Sample(256) for S
// seconds on the full window, random symmetry on. The rate limiter is configured not to block.
// Memory: resident set (/proc/self/statm) growth from before the shard was created, divided by the
// positions stored, taken when the window first fills and again at the end.
//
// RunReplayBench blocks until done (insert time + `seconds`); it deletes `dir` before and after.
// Resident memory is the whole process's: run one at a time, in a process doing nothing else.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zf::replay {

struct ReplayBenchOptions {
  int64_t capacity = 1'000'000;  // window, positions; >= 10000
  int inserters = 16;            // K, 1..256
  // The table's position averaging (replay/table.h). Every generated position is distinct (random
  // planes), its costliest case: one distinct entry per stored position.
  bool position_averaging = false;
  double seconds = 5;  // sampling window, 0.1..600
  std::string dir;     // shard log directory (deleted before and after); required

  // Returns: OK; InvalidArgument naming the field and value.
  absl::Status Validate() const;
};

struct ReplayBenchResult {
  ReplayBenchOptions options;
  int positions_per_game = 0;
  int64_t record_bytes_per_position = 0;  // encoded planes + policy + to_play/full_search
  std::string fsync_policy;
  double insert_positions_per_sec = 0;
  double insert_games_per_sec = 0;
  int sample_batch = 0;
  double sample_positions_per_sec = 0;
  double resident_bytes_per_position_full = 0;  // when the window first filled
  double resident_bytes_per_position_end = 0;   // after 2x capacity inserted
  int64_t stored_positions = 0;
};

// Returns: the measurements; InvalidArgument for bad options; the shard's error if it cannot be
//          created or an insert or sample fails.
absl::StatusOr<ReplayBenchResult> RunReplayBench(const ReplayBenchOptions& options);

// Human-readable table, several lines ending in '\n'.
std::string FormatReplayBenchTable(const ReplayBenchResult& result);
// One JSON object and '\n'. Fields: game, positions_per_game, capacity, inserters, fsync_policy,
// insert_positions_per_sec, insert_games_per_sec, sample_batch, sample_positions_per_sec,
// record_bytes_per_position, resident_bytes_per_position_full, resident_bytes_per_position_end,
// stored_positions, seconds, position_averaging.
std::string FormatReplayBenchJson(const ReplayBenchResult& result);

}  // namespace zf::replay
