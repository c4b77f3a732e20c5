// Replay shard benchmark: durable insert and sample throughput of one in-process Shard with
// Connect Four-shaped records, and its resident memory per stored position at full capacity.
//
//   build/replay/replay_bench [--json] [--capacity N] [--inserters K] [--seconds S] [--dir DIR]
//
// Insert: K threads call Shard::Insert (each acknowledged only after the log's group commit, one
// fdatasync per group) until 2x capacity positions are stored, so the second half runs with a
// full window (evicting and deleting segments). Sample: one thread calls Shard::Sample(256) for S
// seconds on the full window, random symmetry on. The rate limiter is configured not to block.
// Memory: resident set (/proc/self/statm) growth from before the shard was created, divided by the
// positions stored, taken when the window first fills and again at the end.
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
#include "absl/time/clock.h"
#include "absl/time/time.h"
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

int Main(int argc, char** argv) {
  bool json = false;
  int64_t capacity = 1'000'000;
  int inserters = 16;
  double seconds = 5;
  std::string dir = absl::StrCat("/tmp/zf_replay_bench_", getpid());
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](auto* out) {
      if (i + 1 >= argc || !absl::SimpleAtoi(argv[i + 1], out)) {
        std::cerr << "replay_bench: " << arg << " needs a number\n";
        std::exit(2);
      }
      ++i;
    };
    if (arg == "--json") {
      json = true;
    } else if (arg == "--capacity") {
      value(&capacity);
    } else if (arg == "--inserters") {
      value(&inserters);
    } else if (arg == "--seconds") {
      if (i + 1 >= argc || !absl::SimpleAtod(argv[i + 1], &seconds)) {
        std::cerr << "replay_bench: --seconds needs a number\n";
        return 2;
      }
      ++i;
    } else if (arg == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else {
      std::cerr << "replay_bench: unknown argument \"" << arg
                << "\"; usage: replay_bench [--json] [--capacity N] [--inserters K] [--seconds S] "
                   "[--dir DIR]\n";
      return 2;
    }
  }
  if (capacity < 10'000 || inserters < 1 || inserters > 256 || seconds <= 0) {
    std::cerr << "replay_bench: need --capacity >= 10000, --inserters 1..256, --seconds > 0\n";
    return 2;
  }
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
  options.rate_limiter = SampleToInsertRatio(/*samples_per_insert=*/1.0, /*min_size_to_sample=*/1,
                                             /*error_buffer=*/1e15);
  options.rate_limiter.max_insert_positions = 64;
  options.rate_limiter.max_sample_positions = kBatch;
  int64_t baseline = ResidentBytes();
  absl::StatusOr<std::unique_ptr<Shard>> created = Shard::Create(options);
  if (!created.ok()) {
    std::cerr << "replay_bench: " << created.status() << "\n";
    return 1;
  }
  Shard& shard = **created;

  std::atomic<int64_t> next{0};
  std::atomic<int64_t> full_rss{0};
  std::atomic<bool> failed{false};
  absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < inserters; ++t) {
    threads.emplace_back([&] {
      for (int64_t g = next++; g < total_games; g = next++) {
        absl::StatusOr<InsertOutcome> r =
            shard.Insert(games[static_cast<size_t>(g)], absl::InfiniteFuture());
        if (!r.ok()) {
          std::cerr << "replay_bench: insert: " << r.status() << "\n";
          failed = true;
          return;
        }
        if (g == capacity / kPositions && full_rss.load() == 0) full_rss = ResidentBytes();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  double insert_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (failed) return 1;
  games.clear();
  games.shrink_to_fit();
  int64_t end_rss = ResidentBytes();
  ShardStats stats = shard.stats();

  zerofleet::v1::SampleBatch batch;
  int64_t sampled = 0;
  start = absl::Now();
  absl::Time sample_end = start + absl::Seconds(seconds);
  while (absl::Now() < sample_end) {
    if (absl::Status s = shard.Sample(kBatch, absl::InfiniteFuture(), &batch); !s.ok()) {
      std::cerr << "replay_bench: sample: " << s << "\n";
      return 1;
    }
    sampled += kBatch;
  }
  double sample_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  shard.Close();
  std::filesystem::remove_all(dir);

  const double inserted_positions = static_cast<double>(total_games * kPositions);
  double insert_pps = inserted_positions / insert_seconds;
  double insert_gps = static_cast<double>(total_games) / insert_seconds;
  double sample_pps = static_cast<double>(sampled) / sample_seconds;
  // Every record was made before the baseline, so the growth is the shard's (table, log buffers,
  // id sets).
  double full_bytes_per_position =
      static_cast<double>(full_rss.load() - baseline) / static_cast<double>(capacity);
  double end_bytes_per_position =
      static_cast<double>(end_rss - baseline) / static_cast<double>(stats.positions);
  const char* fsync_policy = "group commit: one fdatasync per group of queued records";
  if (json) {
    std::cout << absl::StrFormat(
        "{\"game\": \"connect4-shaped\", \"positions_per_game\": %d, \"capacity\": %d, "
        "\"inserters\": %d, \"fsync_policy\": \"%s\", \"insert_positions_per_sec\": %.0f, "
        "\"insert_games_per_sec\": %.0f, \"sample_batch\": %d, \"sample_positions_per_sec\": %.0f, "
        "\"record_bytes_per_position\": %d, \"resident_bytes_per_position_full\": %.1f, "
        "\"resident_bytes_per_position_end\": %.1f, \"stored_positions\": %d}\n",
        kPositions, capacity, inserters, fsync_policy, insert_pps, insert_gps, kBatch, sample_pps,
        record_bytes_per_position, full_bytes_per_position, end_bytes_per_position,
        stats.positions);
  } else {
    std::cout << absl::StrFormat(
        "replay shard, Connect Four-shaped records (%d positions/game, %d B encoded/position), "
        "capacity %d positions\n"
        "  durable insert (%d threads; %s): %.0f positions/s, %.0f games/s\n"
        "  sample (batch %d, 1 thread, random symmetry): %.0f positions/s\n"
        "  resident memory per stored position: %.1f B when the window first filled, %.1f B after "
        "2x capacity inserted\n",
        kPositions, record_bytes_per_position, capacity, inserters, fsync_policy, insert_pps,
        insert_gps, kBatch, sample_pps, full_bytes_per_position, end_bytes_per_position);
  }
  return 0;
}

}  // namespace
}  // namespace zf::replay

int main(int argc, char** argv) { return zf::replay::Main(argc, argv); }
