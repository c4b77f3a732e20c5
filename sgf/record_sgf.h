// A Go game record as the fleet stores it (zerofleet.v1.GameRecord: a .zfgames file, a replay
// shard's log) as an SGF game: what `zf games export --sgf` writes.
//
// The record's moves (`actions`) are replayed from the empty board of its game ("go:9" and
// komi 7.5 unless the name says otherwise); players are "zerofleet vN" (N the model versions
// that played it, e.g. "zerofleet v11-v12"); the result comes from `returns`, `resigned`,
// `truncated` and `final_score` (sgf::GoResult's text); each move's comment holds the search's
// value for the player to move (root_values) and the three moves the search visited most (the
// policy target), marked "fast search" where playout cap randomization searched less.
//
// Thread-safety: free functions over values; thread-safe.
#pragma once

#include "absl/status/statusor.h"
#include "proto/zerofleet/v1/replay.pb.h"
#include "sgf/go_sgf.h"

namespace zf::sgf {

// Returns: the game; FailedPrecondition for a record that is not Go ("connect4 is not Go") or
// has no moves (written before 2026-12-06, when records began to carry them);
// InvalidArgument for a record whose moves do not replay (naming the move).
absl::StatusOr<GoGameRecord> GoGameFromRecord(const zerofleet::v1::GameRecord& record);

}  // namespace zf::sgf
