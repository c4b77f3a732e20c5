#include "evaluator/results_log.h"

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace zf::evaluator {
namespace {

using zerofleet::v1::EvaluationGame;

constexpr int64_t kMaxRecordBytes = 1 << 20;  // a game record is ~100 bytes

absl::StatusOr<EvaluationGame> Parse(replay::SegmentId segment, absl::string_view payload) {
  EvaluationGame game;
  if (!game.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return absl::DataLossError(
        absl::StrCat("evaluation log segment ", segment, ": a record is not an EvaluationGame"));
  }
  if (absl::Status valid = ValidateEvaluationGame(game); !valid.ok()) {
    return absl::DataLossError(
        absl::StrCat("evaluation log segment ", segment, ": ", valid.message()));
  }
  return game;
}

}  // namespace

absl::Status ValidateEvaluationGame(const EvaluationGame& game) {
  if (game.first().empty() || game.second().empty()) {
    return absl::InvalidArgumentError("evaluation game without both players");
  }
  if (game.first() == game.second()) {
    return absl::InvalidArgumentError(
        absl::StrCat("evaluation game of ", game.first(), " against itself"));
  }
  if (game.result() != EvaluationGame::FIRST_WON && game.result() != EvaluationGame::DRAW &&
      game.result() != EvaluationGame::SECOND_WON) {
    return absl::InvalidArgumentError(
        absl::StrCat("evaluation game ", game.first(), " vs ", game.second(), " without a result"));
  }
  if (game.game().empty()) return absl::InvalidArgumentError("evaluation game without its game");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ResultsLog>> ResultsLog::Open(const std::string& dir) {
  std::unique_ptr<ResultsLog> results(new ResultsLog());
  replay::LogOptions options;
  options.dir = dir;
  options.max_record_bytes = kMaxRecordBytes;
  options.segment_bytes = 16 << 20;
  std::vector<EvaluationGame> games;
  absl::StatusOr<std::unique_ptr<replay::Log>> log =
      replay::Log::Open(options, [&](replay::SegmentId segment, absl::string_view payload) {
        absl::StatusOr<EvaluationGame> game = Parse(segment, payload);
        if (!game.ok()) return game.status();
        games.push_back(*std::move(game));
        return absl::OkStatus();
      });
  if (!log.ok()) return log.status();
  results->log_ = *std::move(log);
  absl::MutexLock lock(&results->mu_);
  results->games_ = std::move(games);
  return results;
}

absl::StatusOr<std::vector<EvaluationGame>> ResultsLog::Read(const std::string& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return absl::NotFoundError(
        absl::StrCat("no evaluation log at ", dir, " (has an evaluator run with this directory?)"));
  }
  std::vector<EvaluationGame> games;
  absl::StatusOr<replay::RecoveryReport> read = replay::Log::Read(
      dir, kMaxRecordBytes, [&](replay::SegmentId segment, absl::string_view payload) {
        absl::StatusOr<EvaluationGame> game = Parse(segment, payload);
        if (!game.ok()) return game.status();
        games.push_back(*std::move(game));
        return absl::OkStatus();
      });
  if (!read.ok()) return read.status();
  return games;
}

absl::Status ResultsLog::Append(const EvaluationGame& game) {
  if (absl::Status valid = ValidateEvaluationGame(game); !valid.ok()) return valid;
  absl::StatusOr<replay::SegmentId> written = log_->Append(game.SerializeAsString());
  if (!written.ok()) return written.status();
  absl::MutexLock lock(&mu_);
  games_.push_back(game);
  return absl::OkStatus();
}

std::vector<EvaluationGame> ResultsLog::games() const {
  absl::MutexLock lock(&mu_);
  return games_;
}

std::vector<GameOutcome> ToOutcomes(const std::vector<EvaluationGame>& games) {
  std::vector<GameOutcome> outcomes;
  outcomes.reserve(games.size());
  for (const EvaluationGame& g : games) {
    outcomes.push_back({g.first(), g.second(),
                        g.result() == EvaluationGame::FIRST_WON    ? Outcome::kFirstWon
                        : g.result() == EvaluationGame::SECOND_WON ? Outcome::kSecondWon
                                                                   : Outcome::kDraw});
  }
  return outcomes;
}

}  // namespace zf::evaluator
