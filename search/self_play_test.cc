#include "search/self_play.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "absl/status/status.h"
#include "common/testing/status_matchers.h"
#include "games/connect4/connect4.h"
#include "games/dotsboxes/dotsboxes.h"
#include "games/go/go.h"
#include "games/tictactoe/tictactoe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/game_record.h"
#include "search/testing/fake_evaluators.h"
#include "search/uniform_evaluator.h"

namespace zf::search {
namespace {

using ::testing::HasSubstr;
using testing::RecordingEvaluator;
using ::zf::games::ConnectFour;
using ::zf::games::DotsAndBoxes;
using ::zf::games::TicTacToe;
using ::zf::testing::StatusIs;

SelfPlayOptions SmallOptions(uint64_t seed) {
  SelfPlayOptions options;
  options.mcts.num_simulations = 64;
  options.mcts.add_noise = true;
  options.temperature_moves = 4;
  options.seed = seed;
  return options;
}

template <typename G>
std::unique_ptr<SelfPlayGame<G>> MakeGame(const G& start, const SelfPlayOptions& options) {
  auto game = SelfPlayGame<G>::Create(start, options);
  EXPECT_TRUE(game.ok()) << game.status();
  return game.ok() ? *std::move(game) : nullptr;
}

// Replays the record's actions from `start` and checks every recorded field against the game.
template <typename G>
void ExpectConsistent(const G& start, const GameRecord& record) {
  ASSERT_OK(record.Validate());
  EXPECT_EQ(record.game, start.Name());
  EXPECT_EQ(record.shape, start.Shape());
  EXPECT_EQ(record.num_actions, start.NumActions());
  const int n = record.NumPositions();
  EXPECT_EQ(n, record.num_moves);
  const size_t plane_size = start.Shape().Size();
  std::vector<uint8_t> planes(plane_size);
  G game = start;
  for (int i = 0; i < n; ++i) {
    ASSERT_FALSE(game.IsTerminal()) << i;
    EXPECT_EQ(record.to_play[i], game.ToPlay()) << i;
    game.Encode(planes.data());
    EXPECT_TRUE(std::equal(planes.begin(), planes.end(), record.planes.begin() + i * plane_size))
        << "planes of position " << i;
    double sum = 0.0;
    for (int a = 0; a < record.num_actions; ++a) {
      const float p = record.policy_targets[i * record.num_actions + a];
      if (p > 0.0f) {
        EXPECT_TRUE(game.IsLegal(a)) << "target on illegal action " << a;
      }
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
    ASSERT_TRUE(game.IsLegal(record.actions[i]));
    game.Apply(record.actions[i]);
  }
  if (record.resigned) {
    EXPECT_FALSE(game.IsTerminal());
    EXPECT_EQ(record.resigning_player, game.ToPlay());
  } else if (record.truncated) {
    EXPECT_FALSE(game.IsTerminal());
    EXPECT_EQ(record.returns, (games::Returns{0.0f, 0.0f}));
  } else {
    ASSERT_TRUE(game.IsTerminal());
    EXPECT_EQ(record.returns, game.Returns());
  }
  // Ownership and score: for games that have them, when the game ended by its rules.
  if constexpr (games::GameWithFinalOwnership<G>) {
    if (!record.resigned && !record.truncated) {
      std::vector<int8_t> owner(static_cast<size_t>(start.Shape().Cells()));
      game.FinalOwnership(owner.data());
      EXPECT_EQ(record.final_ownership, owner);
      ASSERT_TRUE(record.final_score.has_value());
      EXPECT_EQ(*record.final_score, game.FinalScore());
      EXPECT_EQ(*record.final_score > 0, record.returns[0] > 0);
      return;
    }
  }
  EXPECT_TRUE(record.final_ownership.empty());
  EXPECT_FALSE(record.final_score.has_value());
}

TEST(SelfPlayOptionsTest, Validate) {
  EXPECT_OK(SelfPlayOptions().Validate());
  auto bad = [](auto mutate) {
    SelfPlayOptions options;
    mutate(options);
    return options.Validate();
  };
  EXPECT_THAT(bad([](SelfPlayOptions& o) { o.mcts.num_simulations = 1; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_simulations")));
  EXPECT_THAT(bad([](SelfPlayOptions& o) { o.mcts.c_puct = -1; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("c_puct")));
  EXPECT_THAT(bad([](SelfPlayOptions& o) { o.temperature = -1; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("temperature")));
  EXPECT_THAT(bad([](SelfPlayOptions& o) { o.full_search_probability = 1.5f; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("full_search_probability")));
  EXPECT_THAT(bad([](SelfPlayOptions& o) {
                o.full_search_probability = 0.5f;
                o.fast_simulations = 1;
              }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fast_simulations")));
  EXPECT_THAT(bad([](SelfPlayOptions& o) { o.resign_threshold = -1.5f; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("resign_threshold")));
  EXPECT_THAT(bad([](SelfPlayOptions& o) { o.resign_consecutive = 0; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("resign_consecutive")));
  EXPECT_THAT(bad([](SelfPlayOptions& o) { o.resign_playthrough_fraction = 2; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("playthrough")));
  EXPECT_THAT(bad([](SelfPlayOptions& o) { o.rollout_opponent_share = 1.5f; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rollout_opponent_share")));
  EXPECT_THAT(
      bad([](SelfPlayOptions& o) {
        o.rollout_opponent_share = 0.5f;
        o.rollout_opponent_simulations = 1;
      }),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rollout_opponent_simulations")));
  EXPECT_OK(([] {
    SelfPlayOptions o;
    o.rollout_opponent_simulations = 1;  // unused without rollout opponents
    return o.Validate();
  })());
  EXPECT_THAT(bad([](SelfPlayOptions& o) { o.max_moves = -1; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_moves")));
  EXPECT_THAT(SelfPlayGame<TicTacToe>::Create(TicTacToe(),
                                              [] {
                                                SelfPlayOptions o;
                                                o.temperature_moves = -1;
                                                return o;
                                              }()),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(SelfPlayTest, RejectsATerminalStart) {
  TicTacToe over;
  for (const int a : {0, 3, 1, 4, 2}) over.Apply(a);
  EXPECT_THAT(SelfPlayGame<TicTacToe>::Create(over, SelfPlayOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("terminal")));
}

TEST(SelfPlayTest, RecordsAreConsistentForEveryGame) {
  for (uint64_t seed = 0; seed < 5; ++seed) {
    {
      UniformEvaluator<TicTacToe> evaluator;
      auto game = MakeGame(TicTacToe(), SmallOptions(seed));
      ASSERT_OK(game->Play(evaluator, 8));
      ASSERT_TRUE(game->Finished());
      const GameRecord record = game->TakeRecord();
      ExpectConsistent(TicTacToe(), record);
      for (const uint8_t full : record.full_search) EXPECT_EQ(full, 1);
    }
    {
      UniformEvaluator<ConnectFour> evaluator;
      auto game = MakeGame(ConnectFour(), SmallOptions(seed));
      ASSERT_OK(game->Play(evaluator, 8));
      ExpectConsistent(ConnectFour(), game->record());
    }
    {
      // Dots and Boxes: the same player often moves twice; to_play must follow the game.
      auto start = DotsAndBoxes::Create(2, 3);
      ASSERT_OK(start.status());
      UniformEvaluator<DotsAndBoxes> evaluator;
      auto game = MakeGame(*start, SmallOptions(seed));
      ASSERT_OK(game->Play(evaluator, 8));
      ExpectConsistent(*start, game->record());
      EXPECT_EQ(game->record().num_moves, start->NumActions());
    }
  }
}

TEST(SelfPlayTest, GoRecordsFinalOwnershipAndScoreUnlessCutShort) {
  static_assert(!games::GameWithFinalOwnership<ConnectFour>);
  auto start = games::Go::Create(5, 0.5f);
  ASSERT_OK(start.status());
  int with_targets = 0;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    UniformEvaluator<games::Go> evaluator;
    SelfPlayOptions options = SmallOptions(seed);
    options.mcts.num_simulations = 16;
    auto game = MakeGame(*start, options);
    ASSERT_OK(game->Play(evaluator, 8));
    ExpectConsistent(*start, game->record());
    with_targets += game->record().final_score.has_value();
  }
  EXPECT_GT(with_targets, 0);
  // Cut short by the move cap: no targets (the board is not the end of the game).
  SelfPlayOptions options = SmallOptions(1);
  options.max_moves = 3;
  UniformEvaluator<games::Go> evaluator;
  auto game = MakeGame(*start, options);
  ASSERT_OK(game->Play(evaluator, 4));
  EXPECT_TRUE(game->record().truncated);
  ExpectConsistent(*start, game->record());
}

TEST(SelfPlayTest, SameSeedSameGameOtherSeedOtherGame) {
  UniformEvaluator<ConnectFour> evaluator;
  auto a = MakeGame(ConnectFour(), SmallOptions(1));
  auto b = MakeGame(ConnectFour(), SmallOptions(1));
  auto c = MakeGame(ConnectFour(), SmallOptions(2));
  ASSERT_OK(a->Play(evaluator, 4));
  ASSERT_OK(b->Play(evaluator, 4));
  ASSERT_OK(c->Play(evaluator, 4));
  EXPECT_EQ(a->record().actions, b->record().actions);
  EXPECT_EQ(a->record().policy_targets, b->record().policy_targets);
  EXPECT_NE(a->record().actions, c->record().actions);
}

TEST(SelfPlayTest, PlayoutCapRandomizationMarksFastMoves) {
  // Without tree reuse a full search leaves 63 child visits at the root and a fast one 3, so the
  // policy target of a position says which kind of search produced it.
  SelfPlayOptions options = SmallOptions(3);
  options.reuse_tree = false;
  options.mcts.num_simulations = 64;
  options.fast_simulations = 4;
  options.full_search_probability = 0.5f;
  UniformEvaluator<ConnectFour> evaluator;
  int full = 0;
  int fast = 0;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    options.seed = seed;
    auto game = MakeGame(ConnectFour(), options);
    ASSERT_OK(game->Play(evaluator, 4));
    const GameRecord& record = game->record();
    ExpectConsistent(ConnectFour(), record);
    for (int i = 0; i < record.NumPositions(); ++i) {
      const int visits = record.full_search[i] ? 63 : 3;
      (record.full_search[i] ? full : fast) += 1;
      for (int a = 0; a < 7; ++a) {
        const float scaled = record.policy_targets[i * 7 + a] * visits;
        EXPECT_NEAR(scaled, std::round(scaled), 1e-3) << "position " << i << " action " << a;
      }
    }
  }
  EXPECT_GT(full, 10);
  EXPECT_GT(fast, 10);

  options.full_search_probability = 0.0f;
  auto all_fast = MakeGame(ConnectFour(), options);
  RecordingEvaluator<ConnectFour> counting;
  ASSERT_OK(all_fast->Play(counting, 4));
  for (const uint8_t f : all_fast->record().full_search) EXPECT_EQ(f, 0);
  // Each fast search evaluates at most 4 positions (its root and 3 children).
  EXPECT_LE(counting.NumPositions(), 4 * all_fast->record().num_moves);
}

TEST(SelfPlayTest, RolloutOpponentsMoveOneSideWithoutTheNetwork) {
  // Every game has a rollout opponent. Without tree reuse the network's full searches leave 63
  // child visits at the root and the opponent's 49, so a policy target says whose search made it.
  SelfPlayOptions options = SmallOptions(5);
  options.reuse_tree = false;
  options.rollout_opponent_share = 1.0f;
  options.rollout_opponent_simulations = 50;
  std::set<int> sides;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    options.seed = seed;
    auto game = MakeGame(ConnectFour(), options);
    RecordingEvaluator<ConnectFour> network;
    ASSERT_OK(game->Play(network, 4));
    const GameRecord& record = game->record();
    ExpectConsistent(ConnectFour(), record);
    const int opponent = game->rollout_player();
    ASSERT_TRUE(opponent == 0 || opponent == 1) << opponent;
    sides.insert(opponent);
    int network_moves = 0;
    for (int i = 0; i < record.NumPositions(); ++i) {
      const bool by_opponent = record.to_play[i] == opponent;
      network_moves += by_opponent ? 0 : 1;
      EXPECT_EQ(record.full_search[i], by_opponent ? 0 : 1) << "position " << i;
      const int visits = by_opponent ? 49 : 63;
      for (int a = 0; a < 7; ++a) {
        const float scaled = record.policy_targets[i * 7 + a] * visits;
        EXPECT_NEAR(scaled, std::round(scaled), 1e-3) << "position " << i << " action " << a;
      }
    }
    // The network searched only its own moves: 64 simulations each, the root and at most 63
    // leaves, the terminal ones not asked about.
    EXPECT_LE(network.NumPositions(), 64 * network_moves);
    EXPECT_GT(network.NumPositions(), 0);
  }
  EXPECT_EQ(sides, (std::set<int>{0, 1}));  // both colours drawn over six games
}

TEST(SelfPlayTest, RolloutOpponentsPlayLikeRolloutMcts) {
  // A network of uniform priors and value 0 searching 8 simulations against rollout MCTS of 400:
  // the rollout side finds Connect Four's short tactics and wins most of the games.
  SelfPlayOptions options = SmallOptions(7);
  options.mcts.num_simulations = 8;
  options.mcts.add_noise = false;
  options.temperature_moves = 2;
  options.resign_threshold = -1.0f;
  options.rollout_opponent_share = 1.0f;
  options.rollout_opponent_simulations = 400;
  int opponent_wins = 0;
  const int games = 10;
  for (uint64_t seed = 0; seed < games; ++seed) {
    options.seed = seed;
    auto game = MakeGame(ConnectFour(), options);
    UniformEvaluator<ConnectFour> network;
    ASSERT_OK(game->Play(network, 4));
    if (game->record().returns[game->rollout_player()] > 0.0f) ++opponent_wins;
  }
  EXPECT_GE(opponent_wins, 8) << "of " << games;
}

TEST(SelfPlayTest, RolloutOpponentShareSplitsGames) {
  SelfPlayOptions options = SmallOptions(9);
  options.mcts.num_simulations = 4;
  options.rollout_opponent_simulations = 4;
  options.rollout_opponent_share = 0.5f;
  int with_opponent = 0;
  const int games = 40;
  for (uint64_t seed = 0; seed < games; ++seed) {
    options.seed = seed;
    auto game = MakeGame(TicTacToe(), options);
    with_opponent += game->rollout_player() >= 0 ? 1 : 0;
  }
  EXPECT_GT(with_opponent, 10);
  EXPECT_LT(with_opponent, 30);
  options.rollout_opponent_share = 0.0f;
  EXPECT_EQ(MakeGame(TicTacToe(), options)->rollout_player(), -1);
}

TEST(SelfPlayTest, GumbelRootSearchRecordsTheImprovedPolicy) {
  // Fast searches of 8 simulations over m = 4 visit at most 4 of the 7 columns, so a visit
  // distribution would leave 3 of them at 0; the improved policy gives every legal move a share
  // (completed values), full and fast searches alike.
  SelfPlayOptions options = SmallOptions(1);
  options.mcts.gumbel_considered_actions = 4;
  options.full_search_probability = 0.25f;
  options.fast_simulations = 8;
  options.reuse_tree = false;
  UniformEvaluator<ConnectFour> evaluator;
  std::set<std::vector<int>> games;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    options.seed = seed;
    auto game = MakeGame(ConnectFour(), options);
    ASSERT_OK(game->Play(evaluator, 4));
    const GameRecord& record = game->record();
    ExpectConsistent(ConnectFour(), record);
    ConnectFour position;
    for (int i = 0; i < record.NumPositions(); ++i) {
      std::vector<int> legal;
      position.LegalActions(&legal);
      for (const int a : legal) {
        EXPECT_GT(record.policy_targets[i * 7 + a], 0.0f) << "position " << i << " action " << a;
      }
      position.Apply(record.actions[i]);
    }
    games.insert(record.actions);
  }
  EXPECT_EQ(games.size(), 6u);
  // The same seed plays the same game.
  options.seed = 3;
  auto a = MakeGame(ConnectFour(), options);
  auto b = MakeGame(ConnectFour(), options);
  ASSERT_OK(a->Play(evaluator, 4));
  ASSERT_OK(b->Play(evaluator, 4));
  EXPECT_EQ(a->record().actions, b->record().actions);
  EXPECT_EQ(a->record().policy_targets, b->record().policy_targets);
}

// Player 0 always believes it is losing badly; player 1 that it is winning.
float PlayerZeroDespairs(const ConnectFour& position) {
  return position.ToPlay() == 0 ? -0.99f : 0.99f;
}

SelfPlayOptions ResignOptions(uint64_t seed, float playthrough) {
  SelfPlayOptions options = SmallOptions(seed);
  options.resign_threshold = -0.9f;
  options.resign_consecutive = 2;
  options.resign_playthrough_fraction = playthrough;
  return options;
}

TEST(SelfPlayTest, ResignsWhenTheValueStaysLow) {
  RecordingEvaluator<ConnectFour> evaluator(PlayerZeroDespairs);
  auto game = MakeGame(ConnectFour(), ResignOptions(1, /*playthrough=*/0.0f));
  ASSERT_OK(game->Play(evaluator, 8));
  const GameRecord& record = game->record();
  ExpectConsistent(ConnectFour(), record);
  EXPECT_TRUE(record.resigned);
  EXPECT_EQ(record.resigning_player, 0);
  EXPECT_EQ(record.returns, (games::Returns{-1.0f, 1.0f}));
  // Player 0 is below the threshold at plies 0 and 2 and resigns at ply 2, before moving.
  EXPECT_EQ(record.num_moves, 2);
  EXPECT_FALSE(record.resignation_disabled);
  EXPECT_FALSE(record.would_have_resigned);
}

TEST(SelfPlayTest, NoResignationWhenDisabled) {
  RecordingEvaluator<ConnectFour> evaluator(PlayerZeroDespairs);
  SelfPlayOptions options = ResignOptions(1, 0.0f);
  options.resign_threshold = -1.0f;
  auto game = MakeGame(ConnectFour(), options);
  ASSERT_OK(game->Play(evaluator, 8));
  EXPECT_FALSE(game->record().resigned);
  EXPECT_FALSE(game->record().would_have_resigned);
  ExpectConsistent(ConnectFour(), game->record());
}

TEST(SelfPlayTest, PlaythroughGamesRecordWouldHaveResigned) {
  RecordingEvaluator<ConnectFour> evaluator(PlayerZeroDespairs);
  for (uint64_t seed = 0; seed < 6; ++seed) {
    auto game = MakeGame(ConnectFour(), ResignOptions(seed, /*playthrough=*/1.0f));
    ASSERT_OK(game->Play(evaluator, 8));
    const GameRecord& record = game->record();
    ExpectConsistent(ConnectFour(), record);
    EXPECT_FALSE(record.resigned);
    EXPECT_TRUE(record.resignation_disabled);
    EXPECT_TRUE(record.would_have_resigned);
    EXPECT_EQ(record.would_resign_player, 0);
    EXPECT_EQ(record.would_resign_move, 2);
    EXPECT_FALSE(record.truncated);
    // A false positive is a would-be resignation by a player who did not lose.
    EXPECT_EQ(record.resign_false_positive, record.returns[0] >= 0.0f);
  }
}

TEST(SelfPlayTest, PlaythroughFractionSplitsGames) {
  RecordingEvaluator<ConnectFour> evaluator(PlayerZeroDespairs);
  int disabled = 0;
  int resigned = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    auto game = MakeGame(ConnectFour(), ResignOptions(seed, /*playthrough=*/0.5f));
    ASSERT_OK(game->Play(evaluator, 8));
    const GameRecord& record = game->record();
    ASSERT_OK(record.Validate());
    EXPECT_NE(record.resignation_disabled, record.resigned);
    disabled += record.resignation_disabled;
    resigned += record.resigned;
  }
  EXPECT_GT(disabled, 5);
  EXPECT_GT(resigned, 5);
}

TEST(SelfPlayTest, MaxMovesTruncatesAsADraw) {
  SelfPlayOptions options = SmallOptions(2);
  options.max_moves = 5;
  UniformEvaluator<ConnectFour> evaluator;
  auto game = MakeGame(ConnectFour(), options);
  ASSERT_OK(game->Play(evaluator, 4));
  EXPECT_TRUE(game->record().truncated);
  EXPECT_EQ(game->record().num_moves, 5);
  ExpectConsistent(ConnectFour(), game->record());
}

TEST(SelfPlayTest, ManyGamesShareOneRequest) {
  std::vector<std::unique_ptr<SelfPlayGame<ConnectFour>>> games;
  std::vector<SelfPlayGame<ConnectFour>*> pointers;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    games.push_back(MakeGame(ConnectFour(), SmallOptions(seed)));
    pointers.push_back(games.back().get());
  }
  RecordingEvaluator<ConnectFour> evaluator;
  ASSERT_OK(PlaySelfPlayBatched(pointers, evaluator, /*leaves_per_game=*/4));
  int max_batch = 0;
  for (const int size : evaluator.batch_sizes) max_batch = std::max(max_batch, size);
  EXPECT_EQ(max_batch, 32);
  for (const auto& game : games) {
    EXPECT_TRUE(game->Finished());
    ExpectConsistent(ConnectFour(), game->record());
  }
}

TEST(SelfPlayTest, TwoRequestsInFlight) {
  // An actor's loop: while one request is out, collect the next from the same games, then
  // answer the older one. Games must finish with consistent records.
  std::vector<std::unique_ptr<SelfPlayGame<ConnectFour>>> games;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    games.push_back(MakeGame(ConnectFour(), SmallOptions(seed)));
  }
  UniformEvaluator<ConnectFour> uniform;
  struct Request {
    std::vector<PendingLeaf<ConnectFour>> leaves;
    std::vector<int> owners;
  };
  auto collect = [&] {
    Request request;
    for (size_t i = 0; i < games.size(); ++i) {
      const int n = games[i]->CollectLeaves(3, &request.leaves);
      request.owners.insert(request.owners.end(), n, static_cast<int>(i));
    }
    return request;
  };
  auto answer = [&](const Request& request) {
    std::vector<ConnectFour> positions;
    for (const auto& leaf : request.leaves) positions.push_back(leaf.position);
    std::vector<float> policies(positions.size() * 7), values(positions.size());
    ASSERT_OK(uniform.Evaluate(positions, policies, values));
    for (size_t i = 0; i < positions.size(); ++i) {
      games[request.owners[i]]->ApplyEvaluation(
          request.leaves[i], std::span<const float>(policies).subspan(i * 7, 7), values[i]);
    }
  };
  Request older = collect();
  int rounds = 0;
  bool both_in_flight = false;
  while (true) {
    Request newer = collect();
    both_in_flight |= !older.leaves.empty() && !newer.leaves.empty();
    answer(older);
    older = std::move(newer);
    bool all_finished = true;
    for (const auto& game : games) all_finished &= game->Finished();
    if (all_finished && older.leaves.empty()) break;
    ASSERT_LT(++rounds, 100000);
  }
  EXPECT_TRUE(both_in_flight);
  for (const auto& game : games) ExpectConsistent(ConnectFour(), game->record());
}

// Plays `played` again with CreateReanalysis and `evaluator`, checking what every reanalysis
// keeps: the moves, the outcome, a full search of every position.
template <typename G>
GameRecord Reanalyse(const G& start, const SelfPlayOptions& options, const GameRecord& played,
                     Evaluator<G>& evaluator) {
  auto game = SelfPlayGame<G>::CreateReanalysis(start, options, PlayedGame::Of(played));
  EXPECT_TRUE(game.ok()) << game.status();
  if (!game.ok()) return {};
  EXPECT_OK((*game)->Play(evaluator, 8));
  GameRecord record = (*game)->TakeRecord();
  ExpectConsistent(start, record);
  EXPECT_TRUE(record.reanalysis);
  EXPECT_EQ(record.actions, played.actions);
  EXPECT_EQ(record.returns, played.returns);
  EXPECT_EQ(record.resigned, played.resigned);
  EXPECT_EQ(record.resigning_player, played.resigning_player);
  EXPECT_EQ(record.truncated, played.truncated);
  EXPECT_EQ(record.final_ownership, played.final_ownership);
  EXPECT_EQ(record.final_score, played.final_score);
  EXPECT_FALSE(record.would_have_resigned);
  for (int i = 0; i < record.NumPositions(); ++i) EXPECT_EQ(record.full_search[i], 1) << i;
  return record;
}

TEST(SelfPlayReanalysisTest, SearchesEveryPositionOfTheGameInFull) {
  // Played with fast searches only: no position has a policy target.
  SelfPlayOptions options = SmallOptions(3);
  options.full_search_probability = 0.0f;
  options.fast_simulations = 2;
  UniformEvaluator<ConnectFour> player;
  auto game = MakeGame(ConnectFour(), options);
  ASSERT_OK(game->Play(player, 4));
  const GameRecord played = game->TakeRecord();
  for (uint8_t full : played.full_search) ASSERT_EQ(full, 0);

  RecordingEvaluator<ConnectFour> newer;
  options.rollout_opponent_share = 1.0f;  // reanalysis searches both sides with the network
  const GameRecord again = Reanalyse(ConnectFour(), options, played, newer);
  EXPECT_EQ(again.num_moves, played.num_moves);
  // Every position was searched with the newer evaluator, 64 simulations each (tree reuse
  // counts the visits it kept).
  EXPECT_GT(newer.NumPositions(), 2 * played.num_moves);
  // Without noise and with the same seed, the same game is reanalysed the same way.
  RecordingEvaluator<ConnectFour> twin;
  EXPECT_EQ(Reanalyse(ConnectFour(), options, played, twin).policy_targets, again.policy_targets);
}

TEST(SelfPlayReanalysisTest, KeepsAResignationAndATruncation) {
  RecordingEvaluator<ConnectFour> despairs(PlayerZeroDespairs);
  auto resigned = MakeGame(ConnectFour(), ResignOptions(1, /*playthrough=*/0.0f));
  ASSERT_OK(resigned->Play(despairs, 8));
  ASSERT_TRUE(resigned->record().resigned);
  // Resignation is not decided again: the network now sees nothing wrong.
  UniformEvaluator<ConnectFour> calm;
  Reanalyse(ConnectFour(), ResignOptions(1, 0.0f), resigned->record(), calm);

  SelfPlayOptions options = SmallOptions(2);
  options.max_moves = 5;
  auto truncated = MakeGame(ConnectFour(), options);
  ASSERT_OK(truncated->Play(calm, 4));
  ASSERT_TRUE(truncated->record().truncated);
  // A longer cap now does not lengthen the game.
  options.max_moves = 0;
  EXPECT_EQ(Reanalyse(ConnectFour(), options, truncated->record(), calm).num_moves, 5);
}

TEST(SelfPlayReanalysisTest, GoGamesKeepTheirOwnershipAndScore) {
  auto start = games::Go::Create(5, 0.5f);
  ASSERT_OK(start.status());
  SelfPlayOptions options = SmallOptions(0);
  options.mcts.num_simulations = 16;
  options.restrict_pass = true;
  UniformEvaluator<games::Go> evaluator;
  int with_targets = 0;
  for (uint64_t seed = 0; seed < 3; ++seed) {
    options.seed = seed;
    auto game = MakeGame(*start, options);
    ASSERT_OK(game->Play(evaluator, 8));
    with_targets += game->record().final_score.has_value();
    Reanalyse(*start, options, game->record(), evaluator);
  }
  EXPECT_GT(with_targets, 0);
}

TEST(SelfPlayReanalysisTest, RefusesAGameThatDoesNotFitTheRules) {
  const SelfPlayOptions options = SmallOptions(0);
  auto refuse = [&](PlayedGame played, const char* why) {
    EXPECT_THAT(SelfPlayGame<TicTacToe>::CreateReanalysis(TicTacToe(), options, played).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(why)));
  };
  refuse(PlayedGame{}, "no moves");
  refuse(PlayedGame{.actions = {4, 4}, .truncated = true}, "move 1 (action 4) is illegal");
  refuse(PlayedGame{.actions = {4, 9}, .truncated = true}, "move 1 (action 9) is illegal");
  // X wins along the top row at move 4; a sixth move follows the end.
  refuse(PlayedGame{.actions = {0, 3, 1, 4, 2, 5}, .returns = {1.0f, -1.0f}}, "follows");
  refuse(PlayedGame{.actions = {0, 3}}, "neither reached its end");
  SelfPlayOptions bad = options;
  bad.mcts.num_simulations = 1;
  EXPECT_THAT(SelfPlayGame<TicTacToe>::CreateReanalysis(
                  TicTacToe(), bad, PlayedGame{.actions = {0}, .truncated = true})
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace zf::search
