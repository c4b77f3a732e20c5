#include "replay/bench/replay_bench.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "replay/shard.h"

namespace zf::replay {
namespace {

constexpr int kChannels = 3, kRows = 6, kColumns = 7, kActions = 7, kPositions = 30;
constexpr int kBatch = 256;

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

std::string PackFloats(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// A Connect Four-shaped game record with random contents and the mirror symmetry.
zerofleet::v1::GameRecord MakeGame(const std::string& id, std::mt19937_64& rng) {
  zerofleet::v1::GameRecord r;
  r.set_game_id(id);
  r.set_game("connect4");
  r.mutable_plane_shape()->set_channels(kChannels);
  r.mutable_plane_shape()->set_height(kRows);
  r.mutable_plane_shape()->set_width(kColumns);
  r.set_num_actions(kActions);
  r.set_num_positions(kPositions);
  std::string planes(kPositions * kChannels * kRows * kColumns, '\0');
  for (char& c : planes) c = static_cast<char>(rng() & 1);
  r.set_planes(planes);
  std::vector<float> policy(kPositions * kActions);
  for (int i = 0; i < kPositions; ++i) {
    float sum = 0;
    for (int a = 0; a < kActions; ++a) sum += policy[i * kActions + a] = float(rng() % 100 + 1);
    for (int a = 0; a < kActions; ++a) policy[i * kActions + a] /= sum;
  }
  r.set_policy(PackFloats(policy));
  std::string to_play(kPositions, '\0'), full(kPositions, '\1');
  for (int i = 0; i < kPositions; ++i) to_play[i] = static_cast<char>(i % 2);
  r.set_to_play(to_play);
  r.set_full_search(full);
  r.add_returns(1);
  r.add_returns(-1);
  r.add_model_versions(1);
  zerofleet::v1::Symmetry* mirror = r.add_symmetries();
  mirror->set_name("mirror");
  for (int a = 0; a < kActions; ++a) mirror->add_action_map(kActions - 1 - a);
  for (int row = 0; row < kRows; ++row) {
    for (int col = 0; col < kColumns; ++col)
      mirror->add_cell_map(row * kColumns + kColumns - 1 - col);
  }
  return r;
}

}  // namespace

absl::Status ReplayBenchOptions::Validate() const {
  if (capacity < 10'000) {
    return absl::InvalidArgumentError(absl::StrCat("--capacity must be >= 10000, got ", capacity));
  }
  if (inserters < 1 || inserters > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("--inserters must be in 1..256, got ", inserters));
  }
  if (!(seconds >= 0.1 && seconds <= 600)) {
    return absl::InvalidArgumentError(absl::StrCat("--seconds must be in 0.1..600, got ", seconds));
  }
  if (dir.empty()) return absl::InvalidArgumentError("--dir is required");
  return absl::OkStatus();
}

absl::StatusOr<ReplayBenchResult> RunReplayBench(const ReplayBenchOptions& bench) {
  ZF_RETURN_IF_ERROR(bench.Validate());
  const int64_t capacity = bench.capacity;
  const int inserters = bench.inserters;
  const double seconds = bench.seconds;
  const std::string& dir = bench.dir;
  std::filesystem::remove_all(dir);

  // Records are made before measuring (and before the baseline), so neither their generation nor
  // their memory counts.
  const int64_t total_games = 2 * capacity / kPositions;
  std::vector<zerofleet::v1::GameRecord> games;
  {
    std::mt19937_64 rng(42);
    const int distinct = 2000;  // contents repeat, ids do not
    std::vector<zerofleet::v1::GameRecord> templates;
    for (int i = 0; i < distinct; ++i) templates.push_back(MakeGame("", rng));
    games.reserve(static_cast<size_t>(total_games));
    for (int64_t g = 0; g < total_games; ++g) {
      games.push_back(templates[static_cast<size_t>(g % distinct)]);
      games.back().set_game_id(absl::StrCat("bench/", g));
    }
  }
  const int64_t record_bytes_per_position =
      kChannels * kRows * kColumns + kActions * int64_t{sizeof(float)} + 2;

  ShardOptions options;
  options.dir = dir;
  options.table.capacity_positions = capacity;
  options.table.max_positions_per_game = 64;
  options.table.position_averaging = bench.position_averaging;
  options.rate_limiter = SampleToInsertRatio(/*samples_per_insert=*/1.0, /*min_size_to_sample=*/1,
                                             /*error_buffer=*/1e15);
  options.rate_limiter.max_insert_positions = 64;
  options.rate_limiter.max_sample_positions = kBatch;
  int64_t baseline = ResidentBytes();
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<Shard> created, Shard::Create(options));
  Shard& shard = *created;

  std::atomic<int64_t> next{0};
  std::atomic<int64_t> full_rss{0};
  std::atomic<bool> failed{false};
  absl::Mutex error_mu;
  absl::Status error;
  absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < inserters; ++t) {
    threads.emplace_back([&] {
      for (int64_t g = next++; g < total_games; g = next++) {
        absl::StatusOr<InsertOutcome> r =
            shard.Insert(games[static_cast<size_t>(g)], absl::InfiniteFuture());
        if (!r.ok()) {
          absl::MutexLock lock(&error_mu);
          error = r.status();
          failed = true;
          return;
        }
        if (g == capacity / kPositions && full_rss.load() == 0) full_rss = ResidentBytes();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  double insert_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (failed) {
    absl::MutexLock lock(&error_mu);
    return error;
  }
  // Read while the records are still held, as they were at the baseline: freeing them first
  // would subtract whatever of their memory malloc hands back to the kernel (with a high trim
  // threshold, all of it at once), and the figure could read below zero.
  int64_t end_rss = ResidentBytes();
  games.clear();
  games.shrink_to_fit();
  ShardStats stats = shard.stats();

  zerofleet::v1::SampleBatch batch;
  int64_t sampled = 0;
  start = absl::Now();
  absl::Time sample_end = start + absl::Seconds(seconds);
  while (absl::Now() < sample_end) {
    if (absl::Status s = shard.Sample(kBatch, absl::InfiniteFuture(), &batch); !s.ok()) {
      shard.Close();
      std::filesystem::remove_all(dir);
      return s;
    }
    sampled += kBatch;
  }
  double sample_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  shard.Close();
  std::filesystem::remove_all(dir);

  const double inserted_positions = static_cast<double>(total_games * kPositions);
  ReplayBenchResult result;
  result.options = bench;
  result.positions_per_game = kPositions;
  result.record_bytes_per_position = record_bytes_per_position;
  result.fsync_policy = "group commit: one fdatasync per group of queued records";
  result.insert_positions_per_sec = inserted_positions / insert_seconds;
  result.insert_games_per_sec = static_cast<double>(total_games) / insert_seconds;
  result.sample_batch = kBatch;
  result.sample_positions_per_sec = static_cast<double>(sampled) / sample_seconds;
  // Every record was made before the baseline, so the growth is the shard's (table, log buffers,
  // id sets).
  result.resident_bytes_per_position_full =
      static_cast<double>(full_rss.load() - baseline) / static_cast<double>(capacity);
  result.resident_bytes_per_position_end =
      static_cast<double>(end_rss - baseline) / static_cast<double>(stats.positions);
  result.stored_positions = stats.positions;
  return result;
}

std::string FormatReplayBenchJson(const ReplayBenchResult& r) {
  return absl::StrFormat(
      "{\"game\": \"connect4-shaped\", \"positions_per_game\": %d, \"capacity\": %d, "
      "\"inserters\": %d, \"seconds\": %.3f, \"fsync_policy\": \"%s\", "
      "\"insert_positions_per_sec\": %.0f, \"insert_games_per_sec\": %.0f, \"sample_batch\": %d, "
      "\"sample_positions_per_sec\": %.0f, \"record_bytes_per_position\": %d, "
      "\"resident_bytes_per_position_full\": %.1f, \"resident_bytes_per_position_end\": %.1f, "
      "\"stored_positions\": %d, \"position_averaging\": %s}\n",
      r.positions_per_game, r.options.capacity, r.options.inserters, r.options.seconds,
      r.fsync_policy, r.insert_positions_per_sec, r.insert_games_per_sec, r.sample_batch,
      r.sample_positions_per_sec, r.record_bytes_per_position, r.resident_bytes_per_position_full,
      r.resident_bytes_per_position_end, r.stored_positions,
      r.options.position_averaging ? "true" : "false");
}

std::string FormatReplayBenchTable(const ReplayBenchResult& r) {
  return absl::StrFormat(
      "replay shard, Connect Four-shaped records (%d positions/game, %d B encoded/position), "
      "capacity %d positions%s\n"
      "  durable insert (%d threads; %s): %.0f positions/s, %.0f games/s\n"
      "  sample (batch %d, 1 thread, random symmetry): %.0f positions/s\n"
      "  resident memory per stored position: %.1f B when the window first filled, %.1f B after "
      "2x capacity inserted\n",
      r.positions_per_game, r.record_bytes_per_position, r.options.capacity,
      r.options.position_averaging ? ", position averaging" : "", r.options.inserters,
      r.fsync_policy, r.insert_positions_per_sec, r.insert_games_per_sec, r.sample_batch,
      r.sample_positions_per_sec, r.resident_bytes_per_position_full,
      r.resident_bytes_per_position_end);
}

}  // namespace zf::replay
