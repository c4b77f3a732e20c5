// `zf ratings --dir DIR`: every game in DIR/evaluation/ (evaluator/results_log.h) rated at once
// (evaluator/ratings.h), printed strongest first as a table or one JSON object.
#include "cli/commands/ratings_commands.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/common_flags.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "evaluator/ratings.h"
#include "evaluator/results_log.h"

ABSL_FLAG(std::string, anchor, "random",
          "ratings: the player whose rating is fixed at 0 (every other rating is relative to it)");

namespace zf::cli {
namespace {

std::string RatingsJson(const std::string& dir, const std::string& anchor,
                        const evaluator::RatingTable& table) {
  std::vector<std::string> players;
  for (const evaluator::PlayerRating& r : table.players) {
    players.push_back(absl::StrFormat(
        "{\"player\": %s, \"elo\": %.1f, \"lower\": %.1f, \"upper\": %.1f, \"games\": %d, "
        "\"wins\": %g, \"draws\": %g, \"losses\": %g}",
        JsonString(r.player), r.elo, r.lower, r.upper, r.games, r.wins, r.draws, r.losses));
  }
  return absl::StrFormat(
      "{\"dir\": %s, \"games\": %d, \"anchor\": %s, \"confidence\": 0.95, "
      "\"first_move_elo\": %.1f, \"draw_elo\": %.1f, \"players\": [%s]}",
      JsonString(dir), table.games, JsonString(anchor), table.first_move_elo, table.draw_elo,
      absl::StrJoin(players, ", "));
}

std::string RatingsText(const std::string& dir, const std::string& anchor,
                        const evaluator::RatingTable& table) {
  std::string out =
      absl::StrFormat("%d games in %s, rated at once; %s = 0\n", table.games, dir, anchor);
  absl::StrAppendFormat(&out, "%-16s %8s %18s %7s %14s %7s\n", "player", "Elo", "95% interval",
                        "games", "W-D-L", "score");
  for (const evaluator::PlayerRating& r : table.players) {
    const std::string interval =
        r.player == anchor ? "(anchor)" : absl::StrFormat("[%.0f, %.0f]", r.lower, r.upper);
    absl::StrAppendFormat(&out, "%-16s %8.1f %18s %7d %14s %6.1f%%\n", r.player, r.elo, interval,
                          r.games, absl::StrFormat("%g-%g-%g", r.wins, r.draws, r.losses),
                          100.0 * (r.wins + r.draws / 2) / r.games);
  }
  absl::StrAppendFormat(&out,
                        "first-move advantage %.1f Elo, draw width %.1f Elo (BayesElo's model, "
                        "2 virtual draws per pair)\n",
                        table.first_move_elo, table.draw_elo);
  return out;
}

absl::Status RunRatings(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args[0], "\""));
  }
  const std::string dir = absl::GetFlag(FLAGS_dir);
  if (dir.empty()) return absl::InvalidArgumentError("--dir RUN_DIR is required");
  const std::string log_dir = absl::StrCat(dir, "/evaluation");
  ZF_ASSIGN_OR_RETURN(std::vector<zerofleet::v1::EvaluationGame> games,
                      evaluator::ResultsLog::Read(log_dir));
  evaluator::RatingOptions options;
  options.anchor = absl::GetFlag(FLAGS_anchor);
  absl::StatusOr<evaluator::RatingTable> table =
      evaluator::ComputeRatings(evaluator::ToOutcomes(games), options);
  if (!table.ok()) {
    // No games yet, or no anchor: the log is fine, the question has no answer yet.
    return absl::FailedPreconditionError(absl::StrCat(log_dir, ": ", table.status().message()));
  }
  std::cout << (absl::GetFlag(FLAGS_json) ? RatingsJson(log_dir, options.anchor, *table) + "\n"
                                          : RatingsText(log_dir, options.anchor, *table));
  return absl::OkStatus();
}

}  // namespace

std::vector<Command> RatingsCommands() {
  return {
      {"ratings",
       "Elo ratings with 95% intervals of every player in a run's evaluation games",
       "zf ratings --dir RUN_DIR [--anchor random] [--json]",
       {"dir", "anchor", "json"},
       RunRatings},
  };
}

}  // namespace zf::cli
