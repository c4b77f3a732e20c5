// The replay window: the most recent games' positions, sampled uniformly by position.
//
// A Table holds whole games (oldest evicted first) up to `capacity_positions` positions. Each game
// is stored compactly as its packed tensors (planes uint8 [n, C, H, W], policy float32 [n, A],
// to_play and full_search uint8 [n]) plus a few scalars, so resident memory per position is the
// encoded record's size plus a small per-game constant; there is no per-position heap object.
// Symmetry permutations are shared between games that carry identical ones.
//
// Sampling: each of the B rows picks a position uniformly among all stored positions (not games:
// long games are sampled in proportion to their length; distinct positions with position
// averaging, below), with replacement; with
// `apply_random_symmetry`, each row then applies one of the game's symmetries or the identity,
// uniformly, to its planes (moving cell i to cell_map[i] in every channel) and to its policy
// (moving entry a to action_map[a]).
//
// Position averaging (`position_averaging`, off by default; the "position averaging" of Oracle's
// AlphaZero Connect Four study): positions with identical planes (the same input to the network)
// are one distinct position. Each row then picks a distinct position uniformly (however many
// games reached it: the opening no longer takes a share of every batch in proportion to the games
// played) and trains on the mean of its stored occurrences' targets: the value and search value
// over all of them, the policy over the full searches (policy_mask 0 when none was one). Its
// planes, ownership, score, model version and age are those of its newest occurrence, which is
// always stored (games leave oldest first). Positions are grouped by a 64-bit hash of their
// planes: two different positions share one only with probability about n^2 / 2^65 (1e-8 for a
// million distinct positions), which would average their targets, never lose a game. It costs 8
// bytes a stored position and, per distinct position, a fixed entry and A doubles of summed
// policy.
//
// Exactly-once: the ids of stored games are kept; Insert of a stored id stores nothing. The ids
// of the last `remembered_evicted_ids` evicted games are kept too, so a retry that arrives after
// its game was evicted is still recognised; an id evicted longer ago than that is forgotten, and a
// retry with it would be stored again (as a new, and by then very late, game).
//
// All games in a table have one game name, plane shape and action count: the first stored game
// fixes them (or TableOptions does), and ValidateGameRecord refuses others.
//
// Thread-safe: Insert takes the table's lock exclusively; Sample and the accessors share it.
// Nothing here blocks on anything but that lock, and no I/O happens under it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/zerofleet/v1/replay.pb.h"

namespace zf::replay {

struct TableOptions {
  // Window size in positions. >= max_positions_per_game.
  int64_t capacity_positions = 1'000'000;
  // Limits checked by ValidateGameRecord.
  int max_positions_per_game = 512;
  int max_id_bytes = 128;
  int max_plane_values = 64 * 32 * 32;  // C * H * W of one position
  int max_actions = 4096;
  double policy_tolerance = 1e-3;  // |sum of a full-search row - 1|
  int max_symmetries = 16;
  // If set, the shape every game must have; otherwise the first stored game fixes it.
  std::optional<std::string> game;
  // Apply a uniformly chosen symmetry (identity included) to each sampled row.
  bool apply_random_symmetry = true;
  // Sample distinct positions with their occurrences' mean targets (see the class comment).
  bool position_averaging = false;
  // How many evicted game ids are remembered for deduplication (see the class comment).
  int64_t remembered_evicted_ids = 100'000;

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

// Where a stored game's record lives in the log (opaque to the table).
using LogLocation = uint64_t;

// A game that Insert evicted to make room.
struct EvictedGame {
  std::string id;
  int64_t positions = 0;
  LogLocation location = 0;
};

enum class InsertOutcome { kStored, kDuplicate };

struct InsertResult {
  InsertOutcome outcome = InsertOutcome::kStored;
  std::vector<EvictedGame> evicted;  // oldest first; empty for a duplicate
};

class Table {
 public:
  // Returns: the table; InvalidArgument if options.Validate() fails.
  static absl::StatusOr<std::unique_ptr<Table>> Create(const TableOptions& options);

  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  // Stores `record` (which must have passed ValidateGameRecord against this table; a record that
  // did not is a caller bug and ZF_CHECK-fails), evicting the oldest games until it fits, unless
  // its id is stored or remembered as evicted. `location` is returned with the game on eviction.
  // Never blocks except on the table's lock.
  InsertResult Insert(const zerofleet::v1::GameRecord& record, LogLocation location)
      ABSL_LOCKS_EXCLUDED(mu_);

  // True if `id` is stored or remembered as evicted (Insert would store nothing).
  bool Contains(const std::string& id) const ABSL_LOCKS_EXCLUDED(mu_);

  // Fills `batch` with `batch_size` positions drawn uniformly with replacement (distinct positions
  // with position averaging), using `rng`.
  // Returns: OK; FailedPrecondition if the table is empty; InvalidArgument if batch_size < 1.
  absl::Status Sample(int batch_size, std::mt19937_64& rng, zerofleet::v1::SampleBatch* batch) const
      ABSL_LOCKS_EXCLUDED(mu_);

  int64_t num_positions() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t num_games() const ABSL_LOCKS_EXCLUDED(mu_);
  // Distinct positions held with position averaging (0 without it).
  int64_t num_distinct_positions() const ABSL_LOCKS_EXCLUDED(mu_);
  // Bytes of packed tensors held (planes, policy, per-position flags, root values, and position
  // averaging's keys), for memory accounting.
  int64_t payload_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  // The game, shape and action count fixed by the first stored game (or the options); nullopt
  // before then.
  struct Shape {
    std::string game;
    int channels = 0, height = 0, width = 0, num_actions = 0;
  };
  std::optional<Shape> shape() const ABSL_LOCKS_EXCLUDED(mu_);
  const TableOptions& options() const { return options_; }

 private:
  struct SymmetrySet {
    std::vector<std::vector<int32_t>> action_maps;
    std::vector<std::vector<int32_t>> cell_maps;
  };
  struct StoredGame {
    std::string id;
    LogLocation location = 0;
    int64_t first_position = 0;  // global index of position 0 (monotonic over the table's life)
    int32_t n = 0;
    std::string planes;       // uint8 [n, C, H, W]
    std::string policy;       // float32 [n, A]
    std::string to_play;      // uint8 [n]
    std::string full_search;  // uint8 [n]
    float returns[2] = {0, 0};
    std::string ownership;           // int8 [H*W] from player 0's side, or empty
    float score = 0;                 // player 0's final margin, when ownership is not empty
    std::vector<float> root_values;  // [n]: the search's value for to_play[i], or empty
    int64_t model_version = 0;       // newest that played it
    std::shared_ptr<const SymmetrySet> symmetries;  // null when none
    std::vector<uint64_t> position_keys;            // [n] with position averaging, else empty

    // Bytes of packed tensors held: what payload_bytes() counts for this game.
    int64_t PayloadBytes() const {
      return static_cast<int64_t>(
          planes.size() + policy.size() + to_play.size() + full_search.size() + ownership.size() +
          root_values.size() * sizeof(float) + position_keys.size() * sizeof(uint64_t));
    }
  };
  // Position averaging: one distinct position's sums over its stored occurrences.
  struct DistinctPosition {
    uint64_t key = 0;
    int32_t count = 0;       // stored occurrences
    int32_t full_count = 0;  // of which full searches, whose policies are summed
    double value_sum = 0;    // results for the player to move
    double search_value_sum = 0;
    int64_t newest = 0;  // global index of the newest occurrence
  };

  explicit Table(const TableOptions& options) : options_(options) {}
  std::shared_ptr<const SymmetrySet> InternSymmetries(const zerofleet::v1::GameRecord& record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RememberEvicted(std::string id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Position averaging: adds a just-stored game's positions to their distinct positions, or
  // takes an evicted one's away (a distinct position with no occurrence left is removed).
  void AddDistinct(StoredGame& g) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveDistinct(const StoredGame& g) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds (sign +1) or takes away (sign -1) position i of g in d's sums and its summed policy.
  void CountOccurrence(const StoredGame& g, int32_t i, int sign, DistinctPosition& d,
                       double* policy_sum) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TableOptions options_;
  mutable absl::Mutex mu_;
  std::optional<Shape> shape_ ABSL_GUARDED_BY(mu_);
  std::deque<StoredGame> games_ ABSL_GUARDED_BY(mu_);  // oldest first
  int64_t next_position_ ABSL_GUARDED_BY(mu_) = 0;     // global index of the next position
  int64_t num_positions_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t payload_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t games_with_ownership_ ABSL_GUARDED_BY(mu_) = 0;  // stored games with aux targets
  absl::flat_hash_set<std::string> stored_ids_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> evicted_order_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> evicted_ids_ ABSL_GUARDED_BY(mu_);
  // Position averaging: the distinct positions (unordered; removal moves the last into the gap),
  // their summed policies [distinct_.size(), A], and each key's index in distinct_.
  std::vector<DistinctPosition> distinct_ ABSL_GUARDED_BY(mu_);
  std::vector<double> distinct_policy_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, int64_t> distinct_index_ ABSL_GUARDED_BY(mu_);
  // Interned symmetry sets by their serialized form; bounded (kMaxInterned), then unshared.
  absl::flat_hash_map<std::string, std::shared_ptr<const SymmetrySet>> interned_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace zf::replay
