#include "actor/record_proto.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace zf::actor {

absl::StatusOr<zerofleet::v1::GameRecord> ToProto(const search::GameRecord& record,
                                                  const std::string& game_id,
                                                  const std::vector<int64_t>& model_versions,
                                                  const std::vector<games::Symmetry>& symmetries) {
  ZF_RETURN_IF_ERROR(record.Validate());
  if (record.NumPositions() < 1) {
    return absl::InvalidArgumentError("game record has no positions");
  }
  if (game_id.empty() || game_id.size() > 128) {
    return absl::InvalidArgumentError(
        absl::StrCat("game id has ", game_id.size(), " bytes; must be 1..128"));
  }
  zerofleet::v1::GameRecord out;
  out.set_game_id(game_id);
  out.set_game(record.game);
  out.mutable_plane_shape()->set_channels(record.shape.channels);
  out.mutable_plane_shape()->set_height(record.shape.height);
  out.mutable_plane_shape()->set_width(record.shape.width);
  out.set_num_actions(record.num_actions);
  const int n = record.NumPositions();
  out.set_num_positions(n);
  out.set_planes(reinterpret_cast<const char*>(record.planes.data()), record.planes.size());
  // Little-endian float32 (the replay validator assumes a little-endian host as well).
  static_assert(sizeof(float) == 4);
  std::string policy(record.policy_targets.size() * 4, '\0');
  std::memcpy(policy.data(), record.policy_targets.data(), policy.size());
  out.set_policy(std::move(policy));
  std::string to_play(static_cast<size_t>(n), '\0');
  for (int i = 0; i < n; ++i) to_play[i] = static_cast<char>(record.to_play[i]);
  out.set_to_play(std::move(to_play));
  out.set_full_search(reinterpret_cast<const char*>(record.full_search.data()),
                      record.full_search.size());
  out.add_returns(record.returns[0]);
  out.add_returns(record.returns[1]);
  std::vector<int64_t> versions = model_versions;
  std::sort(versions.begin(), versions.end());
  versions.erase(std::unique(versions.begin(), versions.end()), versions.end());
  for (int64_t v : versions) {
    if (v < 0) return absl::InvalidArgumentError(absl::StrCat("model version ", v, " < 0"));
    out.add_model_versions(v);
  }
  for (const games::Symmetry& s : symmetries) {
    bool identity = true;
    for (size_t a = 0; a < s.action_map.size() && identity; ++a) {
      identity = s.action_map[a] == static_cast<int>(a);
    }
    for (size_t c = 0; c < s.cell_map.size() && identity; ++c) {
      identity = s.cell_map[c] == static_cast<int>(c);
    }
    if (identity) continue;
    zerofleet::v1::Symmetry* sym = out.add_symmetries();
    sym->set_name(s.name);
    for (int a : s.action_map) sym->add_action_map(a);
    for (int c : s.cell_map) sym->add_cell_map(c);
  }
  out.set_resigned(record.resigned);
  out.set_truncated(record.truncated);
  out.set_reanalysis(record.reanalysis);
  if (record.actions.size() == static_cast<size_t>(n)) {
    out.mutable_actions()->Assign(record.actions.begin(), record.actions.end());
  }
  if (record.root_values.size() == static_cast<size_t>(n)) {
    out.mutable_root_values()->Assign(record.root_values.begin(), record.root_values.end());
  }
  if (record.final_score.has_value()) {
    out.set_final_ownership(reinterpret_cast<const char*>(record.final_ownership.data()),
                            record.final_ownership.size());
    out.set_final_score(*record.final_score);
  }
  return out;
}

}  // namespace zf::actor
