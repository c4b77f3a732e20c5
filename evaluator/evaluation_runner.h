// What the evaluator role and `zf run` share to rate networks by playing them: a MatchRunner over
// the players of players/player_spec.h ("vN" is CHECKPOINTS/vN.zfckpt played by MCTS on a CPU
// inference session), the default anchors per game, and the one-line report of a rated version.
#pragma once

#include <time.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "evaluator/evaluator.h"
#include "games/game.h"
#include "model/checkpoint.h"
#include "players/player_spec.h"
#include "proto/zerofleet/v1/evaluation.pb.h"
#include "sgf/go_sgf.h"

namespace zf::evaluator {

// Plays evaluation games with the players of players/player_spec.h; "vN" is a network from
// `checkpoints`. With `sgf_dir` (Go only) it also writes each game there as SGF,
// "FIRST-vs-SECOND-SEED.sgf" (players and the search's comments: sgf/go_sgf.h); a file that
// cannot be written is logged, not an error of the game. Thread-compatible: one game at a time
// (the evaluator's thread).
template <games::Game G>
class PlayersMatchRunner final : public evaluator::MatchRunner {
 public:
  PlayersMatchRunner(G start, std::string checkpoints, int sims, std::string sgf_dir = "")
      : start_(start),
        checkpoints_(std::move(checkpoints)),
        sims_(sims),
        sgf_dir_(std::is_same_v<G, games::Go> ? std::move(sgf_dir) : std::string()) {}

  bool Available(const std::string& player) const override {
    if (!evaluator::ParseVersionPlayer(player).has_value()) return true;
    std::error_code error;
    return std::filesystem::exists(absl::StrCat(checkpoints_, "/", player, ".zfckpt"), error);
  }

  absl::StatusOr<zerofleet::v1::EvaluationGame> Play(const std::string& first,
                                                     const std::string& second, int opening_moves,
                                                     uint64_t seed) override {
    // A network's player is kept from one game to the next of a match (loading and verifying its
    // checkpoint is the expensive part); players that are not networks start fresh from `seed`.
    std::map<std::string, std::unique_ptr<players::Player<G>>> networks;
    std::unique_ptr<players::Player<G>> fresh[2];
    players::Player<G>* seats[2] = {nullptr, nullptr};
    for (int seat = 0; seat < 2; ++seat) {
      const std::string& name = seat == 0 ? first : second;
      const uint64_t player_seed = seat == 0 ? seed : seed ^ 0x9e3779b97f4a7c15ull;
      if (!evaluator::ParseVersionPlayer(name).has_value()) {
        ZF_ASSIGN_OR_RETURN(fresh[seat], players::MakePlayer<G>(name, start_, player_seed));
        seats[seat] = fresh[seat].get();
        continue;
      }
      auto it = networks_.find(name);
      if (it == networks_.end()) {
        ZF_ASSIGN_OR_RETURN(std::unique_ptr<players::Player<G>> player,
                            players::MakePlayer<G>(Spec(name), start_, player_seed));
        it = networks_.emplace(name, std::move(player)).first;
      }
      seats[seat] = it->second.get();
      networks.insert(networks_.extract(it));
    }
    networks_ = std::move(networks);  // only this game's networks stay loaded
    G game = start_;
    std::mt19937_64 rng(seed);
    std::vector<int> opening;
    players::PlayRandomOpening(game, opening_moves, rng, &opening);
    zerofleet::v1::EvaluationGame record;
    record.set_moves(static_cast<int>(opening.size()));
    std::vector<int> actions = opening;                                        // for sgf_dir_
    std::vector<std::string> comments(opening.size(), "random opening move");  // for sgf_dir_
    int resigned = -1;
    while (!game.IsTerminal()) {
      ZF_ASSIGN_OR_RETURN(int action, seats[game.ToPlay()]->ChooseAction(game));
      if (action == players::kResignAction) {
        resigned = game.ToPlay();
        break;
      }
      if (!game.IsLegal(action)) {
        return absl::InternalError(
            absl::StrCat("evaluation: ", first, " vs ", second, ": illegal action ", action));
      }
      if (!sgf_dir_.empty()) {
        actions.push_back(action);
        comments.push_back(players::SearchSummary(game, *seats[game.ToPlay()]));
      }
      game.Apply(action);
      record.set_moves(record.moves() + 1);
    }
    if constexpr (std::is_same_v<G, games::Go>) {
      if (!sgf_dir_.empty()) WriteSgf(first, second, seed, game, resigned, actions, comments);
    }
    const float first_return = resigned >= 0 ? (resigned == 0 ? -1.0f : 1.0f) : game.Returns()[0];
    record.set_resigned(resigned >= 0);
    record.set_result(first_return > 0   ? zerofleet::v1::EvaluationGame::FIRST_WON
                      : first_return < 0 ? zerofleet::v1::EvaluationGame::SECOND_WON
                                         : zerofleet::v1::EvaluationGame::DRAW);
    return record;
  }

 private:
  void WriteSgf(const std::string& first, const std::string& second, uint64_t seed, const G& end,
                int resigned, const std::vector<int>& actions,
                const std::vector<std::string>& comments) const {
    const auto name = [&](const std::string& player) {
      return ParseVersionPlayer(player).has_value() ? absl::StrCat(player, " (", Spec(player), ")")
                                                    : player;
    };
    sgf::GoGameRecord sgf_game{
        .start = start_,
        .moves = actions,
        .comments = comments,
        .black = name(first),
        .white = name(second),
        .result = sgf::GoResult(end, resigned >= 0, resigned, /*truncated=*/false),
        .date = absl::FormatTime("%Y-%m-%d", absl::Now(), absl::UTCTimeZone()),
        .name = absl::StrCat("zerofleet evaluation, seed ", seed)};
    std::error_code error;
    std::filesystem::create_directories(sgf_dir_, error);
    const std::string path = absl::StrFormat("%s/%s-vs-%s-%016x.sgf", sgf_dir_,
                                             sgf::FileNameOf(first), sgf::FileNameOf(second), seed);
    absl::Status written = sgf::WriteGoGameFile(path, sgf_game);
    if (!written.ok()) ZF_LOG(WARNING) << "evaluation SGF: " << written;
  }

  std::string Spec(const std::string& player) const {
    if (std::optional<int64_t> v = evaluator::ParseVersionPlayer(player); v.has_value()) {
      return absl::StrCat("net:", checkpoints_, "/", player, ".zfckpt:", sims_);
    }
    return player;
  }

  const G start_;
  const std::string checkpoints_;
  const int sims_;
  const std::string sgf_dir_;  // "" (and for games other than Go): no SGF
  std::map<std::string, std::unique_ptr<players::Player<G>>> networks_;  // of the last game
};

// Holds the thread that plays to `share` of one core: after each game it sleeps until the
// thread's CPU time is at most `share` of the wall time since its first game, with at most 10 s
// of unused share carried (a wait between versions is no licence for a burst after it). `zf run`
// evaluates through it at the process's own priority. Before, a thread at nice 19 evaluated, and
// starved whenever anything else ran on the machine (no Elo in 5 minutes of a demo beside a
// nice-19 build): a share is what the evaluator gets however busy the machine, and no more.
// Thread-compatible, like the runner it wraps; Play is called by one thread.
class CpuShareRunner : public evaluator::MatchRunner {
 public:
  // `inner` must outlive this; `share` in (0, 1]; `stop` ends a sleep early.
  CpuShareRunner(evaluator::MatchRunner* inner, double share, const std::atomic<bool>* stop)
      : inner_(inner), share_(share), stop_(stop) {}

  absl::StatusOr<zerofleet::v1::EvaluationGame> Play(const std::string& first,
                                                     const std::string& second, int opening_moves,
                                                     uint64_t seed) override {
    if (!started_) {
      started_ = true;
      start_wall_ = absl::Now();
      start_cpu_s_ = ThreadCpuSeconds();
    }
    absl::StatusOr<zerofleet::v1::EvaluationGame> game =
        inner_->Play(first, second, opening_moves, seed);
    const double cpu_s = ThreadCpuSeconds() - start_cpu_s_;
    double wall_s = absl::ToDoubleSeconds(absl::Now() - start_wall_);
    constexpr double kMaxCreditS = 10;
    if (wall_s - cpu_s / share_ > kMaxCreditS) {  // unused share beyond the carry: forgotten
      start_wall_ += absl::Seconds(wall_s - cpu_s / share_ - kMaxCreditS);
      wall_s = absl::ToDoubleSeconds(absl::Now() - start_wall_);
    }
    const absl::Time until = absl::Now() + absl::Seconds(std::max(0.0, cpu_s / share_ - wall_s));
    while (absl::Now() < until && !stop_->load()) {
      absl::SleepFor(std::min(absl::Milliseconds(100), until - absl::Now()));
    }
    return game;
  }

  bool Available(const std::string& player) const override { return inner_->Available(player); }

 private:
  static double ThreadCpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }

  evaluator::MatchRunner* const inner_;
  const double share_;
  const std::atomic<bool>* const stop_;
  bool started_ = false;
  absl::Time start_wall_;
  double start_cpu_s_ = 0;
};

// Default anchors: tictactoe random,perfect; connect4 random,mcts:200; go random,gnugo:1; else
// random.
inline std::string DefaultAnchors(const std::string& game) {
  if (game == "tictactoe") return "random,perfect";
  if (game == "connect4") return "random,mcts:200";
  if (absl::StartsWith(game, "go")) return "random,gnugo:1";
  return "random";
}

inline std::string ReportLine(const evaluator::VersionReport& r,
                              const evaluator::EvaluatorStatus& s) {
  std::vector<std::string> parts;
  for (const evaluator::MatchScore& m : r.matches) {
    parts.push_back(absl::StrFormat("vs %s %d-%d-%d%s", m.opponent, m.wins, m.draws, m.losses,
                                    m.gate ? " (gate)" : ""));
  }
  std::string line = absl::StrCat("v", r.version, " ", absl::StrJoin(parts, ", "));
  if (r.rating.has_value()) {
    absl::StrAppendFormat(&line, "; Elo %.0f [%.0f, %.0f]", r.rating->elo, r.rating->lower,
                          r.rating->upper);
  }
  if (r.sprt.has_value()) {
    const bool undecided = r.sprt->decision == evaluator::SprtDecision::kContinue;
    absl::StrAppendFormat(&line, "; SPRT %s (LLR %.2f in [%.2f, %.2f])",
                          undecided ? "undecided at the game limit: reject"
                                    : evaluator::SprtDecisionName(r.sprt->decision),
                          r.sprt->llr, r.sprt->lower, r.sprt->upper);
  }
  if (const std::string best = evaluator::BestVersionText(s); !best.empty()) {
    absl::StrAppend(&line, "; ", best);
  }
  return line;
}

// Copies the checkpoint at `path` (verified) to CHECKPOINTS/vN.zfckpt, N its version, for the
// evaluator's matches (the learner prunes its own files). Returns: its version; ReadCheckpoint's
// or WriteCheckpoint's error; FailedPrecondition for a checkpoint of another game.
inline absl::StatusOr<int64_t> KeepCheckpoint(const std::string& path,
                                              const std::string& checkpoints,
                                              const std::string& game) {
  ZF_ASSIGN_OR_RETURN(model::Checkpoint c, model::ReadCheckpoint(path));
  if (c.manifest.game != game) {
    return absl::FailedPreconditionError(
        absl::StrCat("version ", c.manifest.version, " is for ", c.manifest.game, ", not ", game));
  }
  ZF_RETURN_IF_ERROR(
      model::WriteCheckpoint(absl::StrCat(checkpoints, "/v", c.manifest.version, ".zfckpt"), c)
          .status());
  return c.manifest.version;
}

// Removes CHECKPOINTS/vN.zfckpt except the newest and the best version: the only ones a later
// version plays (a long run would otherwise keep every rated network).
inline void PruneCheckpoints(const std::string& checkpoints,
                             const evaluator::EvaluatorStatus& status) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints, error)) {
    const std::string name = entry.path().filename().string();
    if (!absl::EndsWith(name, ".zfckpt")) continue;
    const std::optional<int64_t> v = evaluator::ParseVersionPlayer(name.substr(0, name.size() - 7));
    if (v.has_value() && *v < status.newest_version && *v != status.best_version) {
      std::filesystem::remove(entry.path(), error);
    }
  }
}

// The anchor rated 0: random if it is an anchor, else the first.
inline std::string RatingAnchor(const std::vector<std::string>& anchors) {
  for (const std::string& a : anchors) {
    if (a == "random") return a;
  }
  return anchors.empty() ? std::string() : anchors.front();
}

}  // namespace zf::evaluator
