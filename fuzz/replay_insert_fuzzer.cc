// libFuzzer target: what a replay shard does with the bytes of an Insert call before anything is
// stored: parse the InsertRequest, validate every game record (replay/validate.h), and store the
// valid ones in a table, then sample from it (the table trusts validated records: a record that
// passes validation and then breaks the table is a finding).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>

#include "proto/zerofleet/v1/replay.pb.h"
#include "replay/table.h"
#include "replay/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zerofleet::v1::InsertRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  zf::replay::TableOptions options;
  options.capacity_positions = 4096;
  options.max_positions_per_game = 256;
  auto table = zf::replay::Table::Create(options);
  if (!table.ok()) abort();
  uint64_t location = 0;
  for (const zerofleet::v1::GameRecord& game : request.games()) {
    if (!zf::replay::ValidateGameRecord(game, options, (*table)->shape()).ok()) continue;
    (*table)->Insert(game, ++location);
  }
  if ((*table)->num_games() > 0) {
    std::mt19937_64 rng(1);
    zerofleet::v1::SampleBatch batch;
    if (!(*table)->Sample(/*batch_size=*/8, rng, &batch).ok()) abort();
  }
  return 0;
}
