#include "evaluator/accuracy.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "common/logging.h"

namespace zf::evaluator {

// The compiled-in text of evaluator/connect4_accuracy_positions.txt (made by CMake).
extern const char kConnectFourAccuracyPositionsText[];

char BestOutcome(const AccuracyPosition& p) {
  if (p.outcomes.find('W') != std::string::npos) return 'W';
  if (p.outcomes.find('D') != std::string::npos) return 'D';
  return 'L';
}

bool IsDecisive(const AccuracyPosition& p) {
  const char best = BestOutcome(p);
  return std::any_of(p.outcomes.begin(), p.outcomes.end(),
                     [best](char c) { return c != '-' && c != best; });
}

absl::StatusOr<std::vector<AccuracyPosition>> ParseAccuracyPositions(absl::string_view text,
                                                                     int num_actions) {
  std::vector<AccuracyPosition> out;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("accuracy positions, line ", line_number, ": ", what, " (\"", line, "\")"));
    };
    if (fields.size() != 2) return error("expected MOVES OUTCOMES");
    AccuracyPosition p;
    if (fields[0] != "-") p.moves = absl::StrSplit(fields[0], ',');
    for (const std::string& move : p.moves) {
      if (move.empty()) return error("MOVES has an empty move (\",,\" or a ',' at an end)");
    }
    p.outcomes = std::string(fields[1]);
    if (static_cast<int>(p.outcomes.size()) != num_actions) {
      return error(absl::StrCat("OUTCOMES must have one character per action (", num_actions, ")"));
    }
    if (p.outcomes.find_first_not_of("WDL-") != std::string::npos) {
      return error("OUTCOMES may hold only W, D, L and -");
    }
    if (!IsDecisive(p)) return error("not decisive: every legal move has the same outcome");
    out.push_back(std::move(p));
  }
  if (out.empty()) return absl::InvalidArgumentError("accuracy positions: no positions");
  return out;
}

std::string FormatAccuracyPositions(const std::vector<AccuracyPosition>& positions,
                                    const std::vector<std::string>& header) {
  std::string out;
  for (const std::string& line : header) absl::StrAppend(&out, "# ", line, "\n");
  for (const AccuracyPosition& p : positions) {
    absl::StrAppend(&out, p.moves.empty() ? "-" : absl::StrJoin(p.moves, ","), " ", p.outcomes,
                    "\n");
  }
  return out;
}

const std::vector<AccuracyPosition>& ConnectFourAccuracyPositions() {
  static const std::vector<AccuracyPosition>* const kPositions = [] {
    absl::StatusOr<std::vector<AccuracyPosition>> parsed =
        ParseAccuracyPositions(kConnectFourAccuracyPositionsText, games::ConnectFour::kColumns);
    ZF_CHECK(parsed.ok()) << parsed.status();
    return new std::vector<AccuracyPosition>(std::move(*parsed));
  }();
  return *kPositions;
}

Interval WilsonInterval(int64_t successes, int64_t trials) {
  if (trials <= 0) return {0.0, 1.0};
  constexpr double z = 1.96;
  const double n = static_cast<double>(trials);
  const double p = static_cast<double>(successes) / n;
  const double denominator = 1 + z * z / n;
  const double centre = (p + z * z / (2 * n)) / denominator;
  const double half = z * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator;
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

std::string AccuracyText(const AccuracyResult& r) {
  auto pct = [](int k, int n) { return n > 0 ? 100.0 * k / n : 0.0; };
  return absl::StrFormat(
      "%.1f%% [%.1f, %.1f] of %d positions (wins kept %.1f%% of %d, draws kept %.1f%% of %d)",
      100 * r.accuracy, 100 * r.interval.lower, 100 * r.interval.upper, r.positions,
      pct(r.win_correct, r.win_positions), r.win_positions, pct(r.draw_correct, r.draw_positions),
      r.draw_positions);
}

std::string AccuracyJson(const AccuracyResult& r, absl::string_view leading_fields) {
  return absl::StrFormat(
      "{%s\"positions\": %d, \"correct\": %d, \"accuracy\": %.4f, \"lower\": %.4f, "
      "\"upper\": %.4f, \"win_positions\": %d, \"win_correct\": %d, \"draw_positions\": %d, "
      "\"draw_correct\": %d, \"seconds\": %.3f}",
      leading_fields, r.positions, r.correct, r.accuracy, r.interval.lower, r.interval.upper,
      r.win_positions, r.win_correct, r.draw_positions, r.draw_correct, r.seconds);
}

absl::Status MakePositionsOptions::Validate() const {
  if (positions < 1 || positions > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("positions must be in 1..100000, got ", positions));
  }
  if (max_games < 1) return absl::InvalidArgumentError("max_games must be >= 1");
  if (min_ply < 0 || min_ply >= games::ConnectFour::kCells) {
    return absl::InvalidArgumentError(absl::StrCat("min_ply must be in 0..41, got ", min_ply));
  }
  if (per_game < 1) return absl::InvalidArgumentError("per_game must be >= 1");
  if (opening_moves < 0 || opening_moves > 20) {
    return absl::InvalidArgumentError("opening_moves must be in 0..20");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<AccuracyPosition>> MakeConnectFourAccuracyPositions(
    players::Player<games::ConnectFour>& first, players::Player<games::ConnectFour>& second,
    games::ConnectFourSolver& solver, const MakePositionsOptions& options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  std::mt19937_64 rng(options.seed);
  std::vector<AccuracyPosition> out;
  absl::flat_hash_set<uint64_t> seen;
  for (int game_index = 0;
       game_index < options.max_games && static_cast<int>(out.size()) < options.positions;
       ++game_index) {
    players::Player<games::ConnectFour>* seats[2] = {&first, &second};
    if (game_index % 2 == 1) std::swap(seats[0], seats[1]);
    games::ConnectFour game;
    std::vector<int> actions;
    players::PlayRandomOpening(game, options.opening_moves, rng, &actions);
    std::vector<games::ConnectFour> history;  // history[k]: the position before actions[k]
    {
      games::ConnectFour replay;
      for (int action : actions) {
        history.push_back(replay);
        replay.Apply(action);
      }
    }
    while (!game.IsTerminal()) {
      ZF_ASSIGN_OR_RETURN(const int action, seats[game.ToPlay()]->ChooseAction(game));
      if (!game.IsLegal(action)) {
        return absl::InternalError(absl::StrCat("accuracy positions: illegal move ", action));
      }
      history.push_back(game);
      game.Apply(action);
      actions.push_back(action);
    }
    // The game's decisive positions, solved from the end backwards (the solver's table then
    // holds what the earlier, harder positions need); one per ply, so distinct.
    std::vector<std::pair<uint64_t, AccuracyPosition>> candidates;  // hash, position
    for (int ply = static_cast<int>(actions.size()) - 1; ply >= options.min_ply; --ply) {
      const games::ConnectFour& position = history[ply];
      if (seen.contains(position.Hash())) continue;
      absl::StatusOr<std::vector<games::ConnectFourSolver::Outcome>> solved =
          solver.MoveOutcomes(position);
      // Beyond the solver's budget: this and every earlier position of the game are left out.
      if (absl::IsResourceExhausted(solved.status())) break;
      if (!solved.ok()) return solved.status();
      const std::vector<games::ConnectFourSolver::Outcome>& outcomes = *solved;
      AccuracyPosition p;
      for (int k = 0; k < ply; ++k) p.moves.push_back(absl::StrCat(actions[k]));
      for (int col = 0; col < games::ConnectFour::kColumns; ++col) {
        if (!position.IsLegal(col)) {
          p.outcomes.push_back('-');
          continue;
        }
        switch (outcomes[col]) {
          case games::ConnectFourSolver::Outcome::kWin:
            p.outcomes.push_back('W');
            break;
          case games::ConnectFourSolver::Outcome::kDraw:
            p.outcomes.push_back('D');
            break;
          case games::ConnectFourSolver::Outcome::kLoss:
            p.outcomes.push_back('L');
            break;
        }
      }
      if (IsDecisive(p)) candidates.emplace_back(position.Hash(), std::move(p));
    }
    std::shuffle(candidates.begin(), candidates.end(), rng);
    for (int k = 0; k < static_cast<int>(candidates.size()) && k < options.per_game &&
                    static_cast<int>(out.size()) < options.positions;
         ++k) {
      seen.insert(candidates[k].first);
      out.push_back(std::move(candidates[k].second));
    }
  }
  if (static_cast<int>(out.size()) < options.positions) {
    return absl::ResourceExhaustedError(
        absl::StrCat("accuracy positions: only ", out.size(), " of ", options.positions,
                     " decisive positions in ", options.max_games,
                     " games (raise max_games, or lower min_ply or the count)"));
  }
  return out;
}

}  // namespace zf::evaluator
