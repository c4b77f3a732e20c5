// Conversion of a finished self-play game (search::GameRecord) into the wire/storage record
// (zerofleet.v1.GameRecord) that replay shards validate (replay/validate.h) and store.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "games/game.h"
#include "proto/zerofleet/v1/replay.pb.h"
#include "search/game_record.h"

namespace zf::actor {

// Builds the proto: planes, policy (float32 little-endian), to_play, full_search, returns,
// resigned/truncated/reanalysis, `game_id`, the distinct non-negative `model_versions` (sorted), and the
// game's `symmetries` without the identity (the shard may apply one to each sampled position).
// Returns: the record; InvalidArgument if record.Validate() fails, the record has no positions
// (the replay shard refuses empty games), game_id is empty or over 128 bytes, or a model
// version is negative.
absl::StatusOr<zerofleet::v1::GameRecord> ToProto(const search::GameRecord& record,
                                                  const std::string& game_id,
                                                  const std::vector<int64_t>& model_versions,
                                                  const std::vector<games::Symmetry>& symmetries);

}  // namespace zf::actor
