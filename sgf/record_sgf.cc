#include "sgf/record_sgf.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "games/registry.h"

namespace zf::sgf {
namespace {

// "v12", "v11-v12", or "" without versions.
std::string Versions(const zerofleet::v1::GameRecord& record) {
  if (record.model_versions_size() == 0) return "";
  const auto [lo, hi] =
      std::minmax_element(record.model_versions().begin(), record.model_versions().end());
  if (*lo == *hi) return absl::StrCat("v", *lo);
  return absl::StrCat("v", *lo, "-v", *hi);
}

}  // namespace

absl::StatusOr<GoGameRecord> GoGameFromRecord(const zerofleet::v1::GameRecord& record) {
  absl::StatusOr<games::GameConfig> config = games::ParseGameName(record.game());
  if (!config.ok()) return config.status();
  if (!config->Is<games::Go>()) {
    return absl::FailedPreconditionError(absl::StrCat(record.game(), " is not Go"));
  }
  const int n = record.num_positions();
  if (record.actions_size() != n || n == 0) {
    return absl::FailedPreconditionError(
        "the record has no moves (written before 2026-12-06, when records began to carry them)");
  }
  GoGameRecord game{.start = config->Get<games::Go>()};
  const int num_actions = record.num_actions();
  if (num_actions != game.start.NumActions()) {
    return absl::InvalidArgumentError(absl::StrCat("record ", record.game_id(), ": ", num_actions,
                                                   " actions, ", record.game(), " has ",
                                                   game.start.NumActions()));
  }
  std::vector<float> policy(static_cast<size_t>(n) * num_actions, 0.0f);
  if (record.policy().size() == policy.size() * sizeof(float)) {
    std::memcpy(policy.data(), record.policy().data(), record.policy().size());
  }
  games::Go position = game.start;
  for (int i = 0; i < n; ++i) {
    const int action = record.actions(i);
    if (position.IsTerminal() || !position.IsLegal(action)) {
      return absl::InvalidArgumentError(absl::StrCat("record ", record.game_id(), ": move ", i + 1,
                                                     " (action ", action, ") does not replay"));
    }
    std::string comment;
    if (record.root_values_size() == n) {
      absl::StrAppendFormat(&comment, "value %+.3f for %s", record.root_values(i),
                            position.ToPlay() == 0 ? "Black" : "White");
    }
    std::vector<std::pair<float, int>> top;
    for (int a = 0; a < num_actions; ++a) {
      const float p = policy[static_cast<size_t>(i) * num_actions + a];
      if (p > 0.0f) top.emplace_back(p, a);
    }
    std::sort(top.begin(), top.end(), [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first > y.first : x.second < y.second;
    });
    if (!top.empty()) absl::StrAppend(&comment, comment.empty() ? "" : "\n", "search:");
    for (size_t t = 0; t < top.size() && t < 3; ++t) {
      absl::StrAppendFormat(&comment, " %s %.0f%%", position.ActionToString(top[t].second),
                            100.0f * top[t].first);
    }
    if (i < static_cast<int>(record.full_search().size()) && record.full_search()[i] == 0) {
      absl::StrAppend(&comment, " (fast search)");
    }
    game.comments.push_back(std::move(comment));
    position.Apply(action);
    game.moves.push_back(action);
  }
  const std::string versions = Versions(record);
  game.black = game.white = absl::StrCat("zerofleet", versions.empty() ? "" : " ", versions);
  if (record.resigned()) {
    game.result = record.returns_size() == 2 && record.returns(0) > 0 ? "B+R" : "W+R";
  } else if (record.truncated()) {
    game.result = "Void";
  } else if (record.has_final_score()) {
    const float score = record.final_score();
    game.result = score == 0.0f
                      ? "0"
                      : absl::StrFormat("%s+%g", score > 0 ? "B" : "W", score > 0 ? score : -score);
  } else {
    game.result = GoResult(position, false, -1, false);
  }
  game.name = record.game_id();
  game.game_comment =
      absl::StrCat("zerofleet self-play", record.reanalysis() ? " (reanalysed)" : "", ", ",
                   record.game(), versions.empty() ? "" : ", model versions ", versions);
  return game;
}

}  // namespace zf::sgf
