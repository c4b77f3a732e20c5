#include "replay/validate.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace zf::replay {
namespace {

using zerofleet::v1::GameRecord;

absl::Status Reject(RejectReason reason, RejectReason* out, absl::string_view what) {
  if (out != nullptr) *out = reason;
  return absl::InvalidArgumentError(absl::StrCat(RejectReasonName(reason), ": ", what));
}

bool IsPermutation(const google::protobuf::RepeatedField<int32_t>& map, int size) {
  if (map.size() != size) return false;
  std::vector<bool> seen(size, false);
  for (int32_t v : map) {
    if (v < 0 || v >= size || seen[v]) return false;
    seen[v] = true;
  }
  return true;
}

}  // namespace

absl::string_view RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kBadId:
      return "bad_id";
    case RejectReason::kBadShape:
      return "bad_shape";
    case RejectReason::kTooLong:
      return "too_long";
    case RejectReason::kBadSize:
      return "bad_size";
    case RejectReason::kBadPolicy:
      return "bad_policy";
    case RejectReason::kNan:
      return "nan";
    case RejectReason::kBadValue:
      return "bad_value";
    case RejectReason::kBadPlayer:
      return "bad_player";
    case RejectReason::kBadFlag:
      return "bad_flag";
    case RejectReason::kBadSymmetry:
      return "bad_symmetry";
    case RejectReason::kBadVersion:
      return "bad_version";
    case RejectReason::kBadOwnership:
      return "bad_ownership";
  }
  return "unknown";
}

absl::Status ValidateGameRecord(const GameRecord& record, const TableOptions& options,
                                const std::optional<Table::Shape>& table_shape,
                                RejectReason* reason) {
  if (record.game_id().empty() ||
      record.game_id().size() > static_cast<size_t>(options.max_id_bytes)) {
    return Reject(RejectReason::kBadId, reason,
                  absl::StrCat("game_id has ", record.game_id().size(), " bytes; must be 1..",
                               options.max_id_bytes));
  }
  const auto& shape = record.plane_shape();
  const int64_t c = shape.channels(), h = shape.height(), w = shape.width();
  const int64_t a = record.num_actions();
  if (c < 1 || h < 1 || w < 1 || c * h * w > options.max_plane_values) {
    return Reject(
        RejectReason::kBadShape, reason,
        absl::StrCat("plane shape [", c, ", ", h, ", ", w, "] must be positive with at most ",
                     options.max_plane_values, " values"));
  }
  if (a < 1 || a > options.max_actions) {
    return Reject(RejectReason::kBadShape, reason,
                  absl::StrCat("num_actions ", a, " must be in [1, ", options.max_actions, "]"));
  }
  if (options.game.has_value() && record.game() != *options.game) {
    return Reject(
        RejectReason::kBadShape, reason,
        absl::StrCat("game \"", record.game(), "\"; this shard holds \"", *options.game, "\""));
  }
  if (table_shape.has_value() &&
      (record.game() != table_shape->game || c != table_shape->channels ||
       h != table_shape->height || w != table_shape->width || a != table_shape->num_actions)) {
    return Reject(RejectReason::kBadShape, reason,
                  absl::StrCat("record is \"", record.game(), "\" [", c, ", ", h, ", ", w, "] x ",
                               a, "; this shard holds \"", table_shape->game, "\" [",
                               table_shape->channels, ", ", table_shape->height, ", ",
                               table_shape->width, "] x ", table_shape->num_actions));
  }
  const int64_t n = record.num_positions();
  if (n < 1 || n > options.max_positions_per_game) {
    return Reject(
        RejectReason::kTooLong, reason,
        absl::StrCat("num_positions ", n, " must be in [1, ", options.max_positions_per_game, "]"));
  }
  auto check_size = [&](absl::string_view field, size_t actual, int64_t expected) -> absl::Status {
    if (actual == static_cast<size_t>(expected)) return absl::OkStatus();
    return Reject(RejectReason::kBadSize, reason,
                  absl::StrCat(field, " has ", actual, " bytes; expected ", expected));
  };
  if (auto s = check_size("planes", record.planes().size(), n * c * h * w); !s.ok()) return s;
  if (auto s = check_size("policy", record.policy().size(), n * a * 4); !s.ok()) return s;
  if (auto s = check_size("to_play", record.to_play().size(), n); !s.ok()) return s;
  if (auto s = check_size("full_search", record.full_search().size(), n); !s.ok()) return s;

  for (int64_t i = 0; i < n; ++i) {
    const auto p = static_cast<uint8_t>(record.to_play()[i]);
    if (p > 1) {
      return Reject(RejectReason::kBadPlayer, reason,
                    absl::StrCat("to_play[", i, "] = ", p, "; must be 0 or 1"));
    }
    const auto f = static_cast<uint8_t>(record.full_search()[i]);
    if (f > 1) {
      return Reject(RejectReason::kBadFlag, reason,
                    absl::StrCat("full_search[", i, "] = ", f, "; must be 0 or 1"));
    }
  }

  // The policy bytes are little-endian float32; this code assumes a little-endian host.
  static_assert(sizeof(float) == 4);
  const char* policy = record.policy().data();
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < a; ++j) {
      float v;
      std::memcpy(&v, policy + (i * a + j) * 4, 4);
      if (!std::isfinite(v)) {
        return Reject(RejectReason::kNan, reason, absl::StrCat("policy[", i, ", ", j, "] is ", v));
      }
      if (v < 0) {
        return Reject(RejectReason::kBadPolicy, reason,
                      absl::StrCat("policy[", i, ", ", j, "] = ", v, " is negative"));
      }
      sum += v;
    }
    if (record.full_search()[i] == 1 && std::abs(sum - 1.0) > options.policy_tolerance) {
      return Reject(RejectReason::kBadPolicy, reason,
                    absl::StrCat("policy row ", i, " (a full search) sums to ", sum,
                                 ", not 1 within ", options.policy_tolerance));
    }
  }

  if (record.returns_size() != 2) {
    return Reject(RejectReason::kBadValue, reason,
                  absl::StrCat("returns has ", record.returns_size(), " values; expected 2"));
  }
  for (int i = 0; i < 2; ++i) {
    const float r = record.returns(i);
    if (!std::isfinite(r)) {
      return Reject(RejectReason::kNan, reason, absl::StrCat("returns[", i, "] is ", r));
    }
    if (r < -1.0f || r > 1.0f) {
      return Reject(RejectReason::kBadValue, reason,
                    absl::StrCat("returns[", i, "] = ", r, " is outside [-1, 1]"));
    }
  }
  for (int64_t v : record.model_versions()) {
    if (v < 0) {
      return Reject(RejectReason::kBadVersion, reason,
                    absl::StrCat("model version ", v, " is negative"));
    }
  }
  if (record.actions_size() != 0 && record.actions_size() != n) {
    return Reject(
        RejectReason::kBadSize, reason,
        absl::StrCat("actions has ", record.actions_size(), " entries; expected 0 or ", n));
  }
  for (int i = 0; i < record.actions_size(); ++i) {
    if (record.actions(i) < 0 || record.actions(i) >= record.num_actions()) {
      return Reject(RejectReason::kBadValue, reason,
                    absl::StrCat("actions[", i, "] = ", record.actions(i), " is outside [0, ",
                                 record.num_actions(), ")"));
    }
  }
  if (record.root_values_size() != 0 && record.root_values_size() != n) {
    return Reject(
        RejectReason::kBadSize, reason,
        absl::StrCat("root_values has ", record.root_values_size(), " entries; expected 0 or ", n));
  }
  for (int i = 0; i < record.root_values_size(); ++i) {
    const float v = record.root_values(i);
    if (!std::isfinite(v) || v < -1.0f || v > 1.0f) {
      return Reject(RejectReason::kBadValue, reason,
                    absl::StrCat("root_values[", i, "] = ", v, " is outside [-1, 1]"));
    }
  }
  if (!record.final_ownership().empty() || record.has_final_score()) {
    auto bad = [&](absl::string_view what) {
      return Reject(RejectReason::kBadOwnership, reason, what);
    };
    if (record.final_ownership().empty() || !record.has_final_score()) {
      return bad("final_ownership and final_score come together");
    }
    if (record.final_ownership().size() != static_cast<size_t>(h * w)) {
      return bad(absl::StrCat("final_ownership has ", record.final_ownership().size(),
                              " bytes; expected ", h * w));
    }
    for (size_t k = 0; k < record.final_ownership().size(); ++k) {
      const int v = static_cast<int8_t>(record.final_ownership()[k]);
      if (v < -1 || v > 1) {
        return bad(absl::StrCat("final_ownership[", k, "] = ", v, "; must be -1, 0 or 1"));
      }
    }
    const float score = record.final_score();
    if (!std::isfinite(score) || std::abs(score) > 4.0f * static_cast<float>(h * w)) {
      return bad(absl::StrCat("final_score ", score, " is not within 4 points a cell"));
    }
    if (record.resigned() || record.truncated()) {
      return bad("a resigned or truncated game has no final ownership or score");
    }
    // returns were checked above: the margin's sign is the result's.
    const float result = record.returns(0);
    if ((score > 0) != (result > 0) || (score < 0) != (result < 0)) {
      return bad(absl::StrCat("final_score ", score, " disagrees with returns[0] = ", result));
    }
  }
  if (record.symmetries_size() > options.max_symmetries) {
    return Reject(
        RejectReason::kBadSymmetry, reason,
        absl::StrCat(record.symmetries_size(), " symmetries; at most ", options.max_symmetries));
  }
  for (int k = 0; k < record.symmetries_size(); ++k) {
    const auto& sym = record.symmetries(k);
    if (!IsPermutation(sym.action_map(), static_cast<int>(a))) {
      return Reject(
          RejectReason::kBadSymmetry, reason,
          absl::StrCat("symmetry ", k, " action_map is not a permutation of ", a, " actions"));
    }
    if (!IsPermutation(sym.cell_map(), static_cast<int>(h * w))) {
      return Reject(
          RejectReason::kBadSymmetry, reason,
          absl::StrCat("symmetry ", k, " cell_map is not a permutation of ", h * w, " cells"));
    }
  }
  return absl::OkStatus();
}

std::optional<std::string> LeadingGameId(absl::string_view payload, int64_t max_id_bytes) {
  // Tag of field 1 with wire type 2 (length-delimited), then a varint length.
  if (payload.empty() || static_cast<uint8_t>(payload[0]) != ((1 << 3) | 2)) return std::nullopt;
  uint64_t length = 0;
  size_t pos = 1;
  bool ended = false;
  for (int shift = 0; shift < 35 && pos < payload.size() && !ended; shift += 7, ++pos) {
    const uint8_t byte = static_cast<uint8_t>(payload[pos]);
    length |= static_cast<uint64_t>(byte & 0x7f) << shift;
    ended = (byte & 0x80) == 0;
  }
  if (!ended) return std::nullopt;
  if (length < 1 || length > static_cast<uint64_t>(max_id_bytes) || length > payload.size() - pos) {
    return std::nullopt;
  }
  return std::string(payload.substr(pos, length));
}

std::optional<std::string> LostGameId(const DamagedRegion& region, absl::string_view bytes,
                                      int64_t max_id_bytes) {
  if (bytes.size() <= static_cast<size_t>(region.header_bytes)) return std::nullopt;
  return LeadingGameId(bytes.substr(static_cast<size_t>(region.header_bytes)), max_id_bytes);
}

}  // namespace zf::replay
