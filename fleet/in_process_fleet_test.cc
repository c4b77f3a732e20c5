// InProcessFleet without the command line: a tiny tic-tac-toe fleet learns (new versions reach
// the inference server), and a second start on the same directory goes on from there.
#include "fleet/in_process_fleet.h"

#include <filesystem>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "common/testing/scratch_dir.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "gtest/gtest.h"
#include "model/game_network.h"

namespace zf::fleet {
namespace {

InProcessFleetOptions TinyTicTacToe(const std::string& dir) {
  InProcessFleetOptions o;
  o.dir = dir;
  o.game = "tictactoe";
  absl::StatusOr<model::NetworkShape> shape = model::NetworkShapeForGameName("tictactoe");
  EXPECT_OK(shape.status());
  o.shape = *shape;
  o.shape.blocks = 1;
  o.shape.filters = 8;
  o.seed = 3;
  o.shards = 2;
  o.capacity_positions = 20'000;
  o.min_size_to_sample = 50;
  o.samples_per_insert = 4;
  o.batch_size = 32;
  o.steps_per_checkpoint = 5;
  o.max_batch = 64;
  o.actor = actor::ActorOptions::ForGame("tictactoe");
  o.actor.workers = 1;
  o.actor.games_per_worker = 8;
  o.actor.self_play.mcts.num_simulations = 8;
  o.actor.self_play.full_search_probability = 1.0f;
  return o;
}

TEST(InProcessFleetOptionsTest, Validate) {
  InProcessFleetOptions o = TinyTicTacToe("/tmp/unused");
  EXPECT_OK(o.Validate());
  o.shards = 0;
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
  o = TinyTicTacToe("");
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(InProcessFleetTest, LearnsServesNewVersionsAndResumes) {
  const std::string dir = testing::ScratchDir("in_process_fleet");
  int64_t published = 0;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<InProcessFleet> fleet,
                         InProcessFleet::Create(TinyTicTacToe(dir)));
    EXPECT_EQ(fleet->metrics_port(), 0);
    ASSERT_OK(fleet->Start());
    EXPECT_EQ(fleet->Start().code(), absl::StatusCode::kFailedPrecondition);
    // Self-play fills the shards, the learner trains and publishes, the server follows.
    ASSERT_TRUE(testing::WaitFor([&] { return fleet->inference().model_version() >= 3; },
                                 absl::Seconds(120)))
        << "served version " << fleet->inference().model_version();
    const InProcessFleet::Sample sample = fleet->TakeSample();
    EXPECT_GT(sample.games, 0);
    EXPECT_GT(sample.positions_stored, 0);
    EXPECT_GT(sample.steps, 0);
    // Every component is a target of the fleet view.
    const FleetScrape scrape = fleet->Scrape();
    ASSERT_EQ(scrape.size(), 5u);  // actor, inference, learner, replay-0, replay-1
    for (const TargetScrape& target : scrape)
      EXPECT_FALSE(target.families.empty()) << target.target;
    const InProcessFleet::StopReport report = fleet->StopSelfPlayAndTraining();
    EXPECT_GE(report.unacked_games, 0);
    EXPECT_OK(fleet->learner_status());
    published = fleet->learner().stats().published_version;
    fleet->ShutdownServers();
  }
  EXPECT_GE(published, 3);
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoints/latest"));
  // A second fleet on the same directory starts from the newest checkpoint.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<InProcessFleet> again,
                       InProcessFleet::Create(TinyTicTacToe(dir)));
  EXPECT_EQ(again->inference().model_version(), published);
  // Destroyed without Start or Stop: the servers still shut down.
}

}  // namespace
}  // namespace zf::fleet
