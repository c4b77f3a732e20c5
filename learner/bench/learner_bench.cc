// learner_bench: training throughput of the learner on this machine.
//
//   learner_bench [STEPS [BATCH [SHARDS [THREADS [DEVICE [NETWORK [BLOCKS FILTERS]]]]]]]
//                 defaults: 50 256 2 0 (0: all cores) cpu (or cuda, auto) connect4 4 64
//   NETWORK       the network's input and output: "CxHxW:A" (C planes of H x W, A actions; no
//                 game needed, e.g. 3x6x7:7), or a game's name as shorthand for its shape
//                 (model/game_network.h: connect4, go:9, tictactoe, ...; a game with final
//                 ownership, Go, gets the ownership and score heads zf run gives it)
//   BLOCKS FILTERS the tower (default 4 x 64; 4 x 32 for a network with those heads, zf run's
//                 Go network), e.g. the fleet's 1 x 16 that bench/sizing measures
//
// 1. Compute only: Trainer::Step on one fixed batch of synthetic positions, repeated (no data
//    path): steps/s and samples/s (with the heads, their targets too). On the CPU it runs four
//    times, alternating the standard NCHW layout and channels-last
//    (TrainerOptions::cpu_channels_last), and reports the mean of each.
// 2. The whole learner (networks without the heads): SHARDS in-process replay servers on
//    loopback (real gRPC), each filled with synthetic games of the shape, a Learner sampling
//    from all of them
//    through the prefetching ReplaySampler: steps/s, samples/s and the data-wait share of its
//    wall time.
// The replay servers run in the same process and share the cores, as they do in `zf run`.
// malloc is tuned as in zf's network commands (common/malloc_tuning.h); ZF_MALLOC_TUNING=0
// measures glibc's defaults.
// Prints one line per measurement and a JSON line.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/grpc/channel.h"
#include "common/malloc_tuning.h"
#include "common/status_macros.h"
#include "learner/learner.h"
#include "learner/trainer.h"
#include "model/game_network.h"
#include "proto/zerofleet/v1/replay.grpc.pb.h"
#include "replay/service/replay_server.h"

namespace {

using zf::learner::Learner;
using zf::learner::LearnerOptions;
using zf::learner::Trainer;
using zf::learner::TrainerOptions;

zerofleet::v1::GameRecord Record(const std::string& id, const std::string& game,
                                 const zf::model::NetworkShape& s, int n, std::mt19937_64& rng) {
  zerofleet::v1::GameRecord r;
  r.set_game_id(id);
  r.set_game(game);
  r.mutable_plane_shape()->set_channels(s.input_channels);
  r.mutable_plane_shape()->set_height(s.board_height);
  r.mutable_plane_shape()->set_width(s.board_width);
  r.set_num_actions(s.num_actions);
  r.set_num_positions(n);
  std::string planes(static_cast<size_t>(n * s.PlaneSize()), '\0');
  for (char& c : planes) c = static_cast<char>(rng() % 2);
  std::vector<float> policy(static_cast<size_t>(n * s.num_actions), 0.0f);
  std::string to_play, full;
  for (int i = 0; i < n; ++i) {
    policy[static_cast<size_t>(i * s.num_actions + static_cast<int>(rng() % s.num_actions))] = 1;
    to_play.push_back(static_cast<char>(i % 2));
    full.push_back(1);
  }
  r.set_planes(planes);
  r.set_policy(std::string(reinterpret_cast<const char*>(policy.data()), policy.size() * 4));
  r.set_to_play(to_play);
  r.set_full_search(full);
  r.add_returns(1.0f);
  r.add_returns(-1.0f);
  r.add_model_versions(0);
  return r;
}

// NETWORK: "CxHxW:A" (the records' game is then "synthetic"), or a game's name (its shape, with
// the heads where it has final ownership).
struct Network {
  zf::model::NetworkShape shape;
  std::string game;
};
absl::StatusOr<Network> ParseNetwork(const std::string& network) {
  int c = 0, h = 0, w = 0, a = 0;
  char tail = 0;
  Network out;
  if (std::sscanf(network.c_str(), "%dx%dx%d:%d%c", &c, &h, &w, &a, &tail) == 4) {
    out.shape.input_channels = c;
    out.shape.board_height = h;
    out.shape.board_width = w;
    out.shape.num_actions = a;
    out.game = "synthetic";
    return out;
  }
  absl::StatusOr<zf::model::NetworkShape> shape = zf::model::NetworkShapeForGameName(network);
  if (!shape.ok()) return shape.status();
  out.shape = *shape;
  out.game = network;
  return out;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "learner_bench: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // As zf does for its network commands (common/malloc_tuning.h); ZF_MALLOC_TUNING=0 for glibc's
  // defaults.
  const absl::StatusOr<bool> malloc_tuned = zf::TuneMallocForTensors();
  if (!malloc_tuned.ok()) return Fail(malloc_tuned.status());
  const int steps = argc > 1 ? std::atoi(argv[1]) : 50;
  const int batch = argc > 2 ? std::atoi(argv[2]) : 256;
  const int shards = argc > 3 ? std::atoi(argv[3]) : 2;
  int threads = argc > 4 ? std::atoi(argv[4]) : 0;
  const std::string device = argc > 5 ? argv[5] : "cpu";
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::string network = argc > 6 ? argv[6] : "connect4";
  absl::StatusOr<Network> parsed = ParseNetwork(network);
  if (!parsed.ok()) return Fail(parsed.status());
  zf::model::NetworkShape shape = parsed->shape;
  shape.blocks = argc > 8 ? std::atoi(argv[7]) : 4;
  shape.filters = argc > 8 ? std::atoi(argv[8]) : (shape.aux_heads ? 32 : 64);
  if (absl::Status valid = shape.Validate(); !valid.ok()) return Fail(valid);
  const std::string game_name = parsed->game;  // the records' and the trainer's game
  std::mt19937_64 rng(1);

  TrainerOptions t;
  t.game = game_name;
  t.shape = shape;
  t.intra_op_threads = threads;
  t.device = device;
  std::printf(
      "learner_bench: %s, %s, batch %d, %d LibTorch threads, %d steps, device %s, malloc %s\n",
      game_name.c_str(), shape.DebugString().c_str(), batch, threads, steps, device.c_str(),
      *malloc_tuned ? "tuned" : "not tuned");

  // 1. Compute only.
  zerofleet::v1::SampleBatch b;
  {
    zerofleet::v1::GameRecord r = Record("x", game_name, shape, batch, rng);
    b.set_batch_size(batch);
    b.set_game(game_name);
    *b.mutable_plane_shape() = r.plane_shape();
    b.set_num_actions(shape.num_actions);
    b.set_planes(r.planes());
    b.set_policy(r.policy());
    std::vector<float> value(static_cast<size_t>(batch), 0.0f);
    for (auto& v : value) v = static_cast<float>(static_cast<int>(rng() % 3) - 1);
    b.set_value(std::string(reinterpret_cast<const char*>(value.data()), value.size() * 4));
    b.set_policy_mask(std::string(static_cast<size_t>(batch), '\1'));
    if (shape.aux_heads) {
      const size_t cells = static_cast<size_t>(batch) * shape.board_height * shape.board_width;
      std::string ownership(cells, '\0');
      for (char& o : ownership) o = static_cast<char>(static_cast<int>(rng() % 3) - 1);
      b.set_ownership(ownership);
      std::vector<float> score(static_cast<size_t>(batch));
      for (auto& v : score) v = static_cast<float>(static_cast<int>(rng() % 41) - 20);
      b.set_score(std::string(reinterpret_cast<const char*>(score.data()), score.size() * 4));
      b.set_aux_mask(std::string(static_cast<size_t>(batch), '\1'));
    }
  }
  // Steps/s of `steps` steps with the given layout (after 3 warm-up steps).
  auto compute_only = [&](bool channels_last) -> absl::StatusOr<double> {
    TrainerOptions options = t;
    options.cpu_channels_last = channels_last;
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(options));
    for (int i = 0; i < 3; ++i) ZF_RETURN_IF_ERROR(trainer->Step(b).status());  // warm-up
    const absl::Time start = absl::Now();
    for (int i = 0; i < steps; ++i) ZF_RETURN_IF_ERROR(trainer->Step(b).status());
    // On CUDA Step only queues work (losses are read every report_every steps): one Evaluate
    // reads a loss, i.e. waits for every queued step, before the clock stops.
    ZF_RETURN_IF_ERROR(trainer->Evaluate(b).status());
    return steps / absl::ToDoubleSeconds(absl::Now() - start);
  };
  const bool cpu = device == "cpu";
  double sums[2] = {0, 0};  // [0]: NCHW, [1]: channels-last
  int runs[2] = {0, 0};
  for (int round = 0; round < (cpu ? 4 : 1); ++round) {
    const bool channels_last = cpu ? round % 2 == 1 : t.cpu_channels_last;
    absl::StatusOr<double> rate = compute_only(channels_last);
    if (!rate.ok()) return Fail(rate.status());
    sums[channels_last] += *rate;
    ++runs[channels_last];
    std::printf("compute only (%s): %.2f steps/s, %.0f samples/s (%.1f ms/step)\n",
                cpu ? (channels_last ? "channels-last" : "NCHW") : "default", *rate, *rate * batch,
                1000 / *rate);
  }
  // Per layout on the CPU; 0 (not measured) on CUDA, where the layout option does not apply.
  const double nchw_steps_per_s = cpu && runs[0] > 0 ? sums[0] / runs[0] : 0;
  const double channels_last_steps_per_s = cpu && runs[1] > 0 ? sums[1] / runs[1] : 0;
  const double compute_steps_per_s =
      cpu ? (t.cpu_channels_last ? channels_last_steps_per_s : nchw_steps_per_s)
          : sums[0] + sums[1];
  if (cpu) {
    std::printf("compute only, means: NCHW %.2f, channels-last %.2f steps/s (%.2fx)\n",
                nchw_steps_per_s, channels_last_steps_per_s,
                channels_last_steps_per_s / nchw_steps_per_s);
  }
  if (shape.aux_heads) {  // the synthetic games of part 2 carry no ownership or score targets
    std::printf(
        "{\"game\":\"%s\",\"network\":\"%s\",\"device\":\"%s\",\"batch\":%d,\"threads\":%d,"
        "\"compute_steps_per_s\":%.3f,\"nchw_steps_per_s\":%.3f,"
        "\"channels_last_steps_per_s\":%.3f,\"malloc_tuned\":%s}\n",
        game_name.c_str(), shape.DebugString().c_str(), device.c_str(), batch, threads,
        compute_steps_per_s, nchw_steps_per_s, channels_last_steps_per_s,
        *malloc_tuned ? "true" : "false");
    return 0;
  }

  // 2. The learner over replay shards.
  const std::string dir =
      absl::StrCat(std::filesystem::temp_directory_path().string(), "/learner_bench_", ::getpid());
  std::filesystem::remove_all(dir);
  std::vector<std::unique_ptr<zf::replay::ReplayServer>> servers;
  LearnerOptions o;
  for (int s = 0; s < shards; ++s) {
    zf::replay::ReplayServerOptions ro;
    ro.listen = "127.0.0.1:0";
    ro.dir = absl::StrCat(dir, "/replay", s);
    ro.capacity_positions = 100000;
    ro.min_size_to_sample = 100;
    ro.samples_per_insert = 1e6;  // the benchmark measures the learner, not the rate limiter
    ro.error_buffer = 1e12;
    ro.insert_workers.num_threads = 2;
    ro.sample_workers.num_threads = 2;
    absl::StatusOr<std::unique_ptr<zf::replay::ReplayServer>> server =
        zf::replay::ReplayServer::Create(ro);
    if (!server.ok()) return Fail(server.status());
    const std::string address = absl::StrCat("127.0.0.1:", (*server)->port());
    auto stub = zerofleet::v1::Replay::NewStub(zf::grpc_util::CreateChannel(address));
    for (int g = 0; g < 100; ++g) {
      zerofleet::v1::InsertRequest request;
      for (int k = 0; k < 4; ++k)
        *request.add_games() = Record(absl::StrCat(g, "/", k), game_name, shape, 30, rng);
      zerofleet::v1::InsertResponse response;
      grpc::Status status;
      for (int attempt = 0; attempt < 100; ++attempt) {
        grpc::ClientContext context;
        context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
        status = stub->Insert(&context, request, &response);
        if (status.error_code() != grpc::StatusCode::UNAVAILABLE) break;
        absl::SleepFor(absl::Milliseconds(50));  // recovering its (empty) log
      }
      if (!status.ok()) return Fail(absl::InternalError(status.error_message()));
    }
    o.sampler.shards.push_back(address);
    servers.push_back(*std::move(server));
  }
  o.trainer = t;
  o.batch_size = batch;
  o.dir = absl::StrCat(dir, "/run");
  o.steps_per_checkpoint = 1'000'000;  // only the initial and the final checkpoint
  o.max_steps = steps;
  absl::StatusOr<std::unique_ptr<Learner>> learner = Learner::Create(o);
  if (!learner.ok()) return Fail(learner.status());
  if (absl::Status s = (*learner)->Run(); !s.ok()) return Fail(s);
  const zf::learner::LearnerStats stats = (*learner)->stats();
  const double seconds = absl::ToDoubleSeconds(stats.run_time);
  const double wait_share = absl::ToDoubleSeconds(stats.data_wait) / seconds;
  std::printf(
      "learner, %d shards: %.2f steps/s, %.0f samples/s, data wait %.1f%% of %.1f s (incl. the "
      "final checkpoint)\n",
      shards, stats.steps_this_run / seconds, stats.samples_this_run / seconds, 100 * wait_share,
      seconds);
  std::printf(
      "{\"game\":\"%s\",\"network\":\"%s\",\"device\":\"%s\",\"batch\":%d,\"threads\":%d,"
      "\"compute_steps_per_s\":%.3f,\"nchw_steps_per_s\":%.3f,\"channels_last_steps_per_s\":%.3f,"
      "\"learner_steps_per_s\":%.3f,\"learner_samples_per_s\":%.1f,\"data_wait_share\":%.4f,"
      "\"shards\":%d,\"malloc_tuned\":%s}\n",
      game_name.c_str(), shape.DebugString().c_str(), device.c_str(), batch, threads,
      compute_steps_per_s, nchw_steps_per_s, channels_last_steps_per_s,
      stats.steps_this_run / seconds, stats.samples_this_run / seconds, wait_share, shards,
      *malloc_tuned ? "true" : "false");
  std::fflush(stdout);  // the figures are out before the clean-up (see selfplay_bench.cc)
  learner->reset();
  servers.clear();
  std::filesystem::remove_all(dir);
  return 0;
}
