// Validation of incoming game records: everything the table and the learner rely on, checked
// before anything about a record is stored.
//
// Thread-safe (pure functions).
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/zerofleet/v1/replay.pb.h"
#include "replay/log.h"
#include "replay/table.h"

namespace zf::replay {

// Why a record was refused; the metric label is RejectReasonName(reason).
enum class RejectReason {
  kBadId,         // "bad_id": empty or longer than max_id_bytes
  kBadShape,      // "bad_shape": non-positive or too large C/H/W/A, or not the table's game/shape
  kTooLong,       // "too_long": no positions, or more than max_positions_per_game
  kBadSize,       // "bad_size": a tensor's byte size does not match its shape; actions or
                  // root_values neither empty nor n entries
  kBadPolicy,     // "bad_policy": negative entry, or a full-search row not summing to 1
  kNan,           // "nan": NaN or infinity in policy or returns
  kBadValue,      // "bad_value": returns not 2 values in [-1, 1]; an action outside [0, A);
                  // a root value outside [-1, 1]
  kBadPlayer,     // "bad_player": to_play not 0 or 1
  kBadFlag,       // "bad_flag": full_search not 0 or 1
  kBadSymmetry,   // "bad_symmetry": a map of the wrong size or not a permutation; too many
  kBadVersion,    // "bad_version": a negative model version
  kBadOwnership,  // "bad_ownership": final_ownership without final_score or the other way
                  // round, not H*W cells of -1/0/1, a score beyond 4 points a cell or not
                  // finite, a score whose sign is not the result's, or either in a
                  // resigned or truncated game
};
inline constexpr int kNumRejectReasons = 12;

absl::string_view RejectReasonName(RejectReason reason);

// Checks `record` against `options` and, if set, the shape the table already holds.
// Returns: OK; InvalidArgument whose message starts with the reason's name ("bad_policy: row 3
// sums to 0.5"). On error, `*reason` (if not null) is set.
absl::Status ValidateGameRecord(const zerofleet::v1::GameRecord& record,
                                const TableOptions& options,
                                const std::optional<Table::Shape>& table_shape = std::nullopt,
                                RejectReason* reason = nullptr);

// The game id a serialized GameRecord starts with (Protobuf writes field 1, game_id, first), read
// from a damaged log record's payload: what can still be said of a game whose record is lost.
// Returns nullopt when the bytes do not start with a game_id field of 1..max_id_bytes bytes.
std::optional<std::string> LeadingGameId(absl::string_view payload,
                                         int64_t max_id_bytes = TableOptions().max_id_bytes);

// LeadingGameId of a damaged log region's record (`bytes`, as Log's DamageVisitor gets them): the
// payload starts region.header_bytes in, if its header survived.
std::optional<std::string> LostGameId(const DamagedRegion& region, absl::string_view bytes,
                                      int64_t max_id_bytes = TableOptions().max_id_bytes);

}  // namespace zf::replay
