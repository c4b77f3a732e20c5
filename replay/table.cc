#include "replay/table.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/logging.h"

namespace zf::replay {
namespace {
constexpr size_t kMaxInterned = 64;
}  // namespace

using zerofleet::v1::GameRecord;
using zerofleet::v1::SampleBatch;

absl::Status TableOptions::Validate() const {
  if (max_positions_per_game < 1) {
    return absl::InvalidArgumentError("max_positions_per_game must be >= 1");
  }
  if (capacity_positions < max_positions_per_game) {
    return absl::InvalidArgumentError(absl::StrCat("capacity_positions (", capacity_positions,
                                                   ") must be >= max_positions_per_game (",
                                                   max_positions_per_game, ")"));
  }
  if (max_id_bytes < 1 || max_plane_values < 1 || max_actions < 1 || max_symmetries < 0) {
    return absl::InvalidArgumentError(
        "max_id_bytes, max_plane_values and max_actions must be >= 1, max_symmetries >= 0");
  }
  if (!(policy_tolerance >= 0)) return absl::InvalidArgumentError("policy_tolerance must be >= 0");
  if (remembered_evicted_ids < 0) {
    return absl::InvalidArgumentError("remembered_evicted_ids must be >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Table>> Table::Create(const TableOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  return std::unique_ptr<Table>(new Table(options));
}

std::shared_ptr<const Table::SymmetrySet> Table::InternSymmetries(const GameRecord& record) {
  if (record.symmetries_size() == 0) return nullptr;
  std::string key;
  for (const auto& s : record.symmetries()) {
    key.append(reinterpret_cast<const char*>(s.action_map().data()),
               s.action_map_size() * sizeof(int32_t));
    key.push_back('|');
    key.append(reinterpret_cast<const char*>(s.cell_map().data()),
               s.cell_map_size() * sizeof(int32_t));
    key.push_back('#');
  }
  if (auto it = interned_.find(key); it != interned_.end()) return it->second;
  auto set = std::make_shared<SymmetrySet>();
  for (const auto& s : record.symmetries()) {
    set->action_maps.emplace_back(s.action_map().begin(), s.action_map().end());
    set->cell_maps.emplace_back(s.cell_map().begin(), s.cell_map().end());
  }
  if (interned_.size() < kMaxInterned) interned_.emplace(std::move(key), set);
  return set;
}

void Table::RememberEvicted(std::string id) {
  if (options_.remembered_evicted_ids == 0) return;
  if (static_cast<int64_t>(evicted_order_.size()) >= options_.remembered_evicted_ids) {
    evicted_ids_.erase(evicted_order_.front());
    evicted_order_.pop_front();
  }
  evicted_ids_.insert(id);
  evicted_order_.push_back(std::move(id));
}

void Table::CountOccurrence(const StoredGame& g, int32_t i, int sign, DistinctPosition& d,
                            double* policy_sum) {
  const float v = g.returns[static_cast<uint8_t>(g.to_play[i])];
  d.count += sign;
  d.value_sum += sign * v;
  d.search_value_sum += sign * (g.root_values.empty() ? v : g.root_values[i]);
  if (g.full_search[i] == 0) return;
  d.full_count += sign;
  const int64_t a = shape_->num_actions;
  if (d.full_count == 0) {
    std::fill_n(policy_sum, a, 0.0);  // no rounding residue left behind
    return;
  }
  for (int64_t k = 0; k < a; ++k) {
    float p;
    std::memcpy(&p, g.policy.data() + (i * a + k) * 4, 4);
    policy_sum[k] += sign * p;
  }
}

void Table::AddDistinct(StoredGame& g) {
  const int64_t plane_values =
      static_cast<int64_t>(shape_->channels) * shape_->height * shape_->width;
  const int64_t a = shape_->num_actions;
  g.position_keys.resize(g.n);
  for (int32_t i = 0; i < g.n; ++i) {
    const uint64_t key = absl::Hash<absl::string_view>{}(
        absl::string_view(g.planes.data() + i * plane_values, plane_values));
    g.position_keys[i] = key;
    auto [it, added] = distinct_index_.try_emplace(key, static_cast<int64_t>(distinct_.size()));
    if (added) {
      distinct_.push_back(DistinctPosition{.key = key});
      distinct_policy_.resize(distinct_policy_.size() + a, 0.0);
    }
    const int64_t slot = it->second;
    CountOccurrence(g, i, +1, distinct_[slot], distinct_policy_.data() + slot * a);
    distinct_[slot].newest = g.first_position + i;
  }
}

void Table::RemoveDistinct(const StoredGame& g) {
  const int64_t a = shape_->num_actions;
  for (int32_t i = 0; i < g.n; ++i) {
    const auto it = distinct_index_.find(g.position_keys[i]);
    ZF_CHECK(it != distinct_index_.end()) << "an evicted position was never added";
    const int64_t slot = it->second;
    if (distinct_[slot].count > 1) {
      CountOccurrence(g, i, -1, distinct_[slot], distinct_policy_.data() + slot * a);
      continue;
    }
    // Its last occurrence: move the last distinct position into the gap.
    distinct_index_.erase(it);
    const int64_t last = static_cast<int64_t>(distinct_.size()) - 1;
    if (slot != last) {
      distinct_[slot] = distinct_[last];
      std::copy_n(distinct_policy_.data() + last * a, a, distinct_policy_.data() + slot * a);
      distinct_index_[distinct_[slot].key] = slot;
    }
    distinct_.pop_back();
    distinct_policy_.resize(distinct_policy_.size() - a);
  }
}

InsertResult Table::Insert(const GameRecord& record, LogLocation location) {
  InsertResult result;
  const int32_t n = record.num_positions();
  ZF_CHECK(n >= 1 && n <= options_.max_positions_per_game) << "record not validated";
  absl::MutexLock lock(&mu_);
  if (stored_ids_.contains(record.game_id()) || evicted_ids_.contains(record.game_id())) {
    result.outcome = InsertOutcome::kDuplicate;
    return result;
  }
  if (!shape_.has_value()) {
    shape_ = Shape{record.game(), record.plane_shape().channels(), record.plane_shape().height(),
                   record.plane_shape().width(), record.num_actions()};
  }
  while (num_positions_ + n > options_.capacity_positions) {
    StoredGame& old = games_.front();
    num_positions_ -= old.n;
    payload_bytes_ -= old.PayloadBytes();
    if (!old.ownership.empty()) --games_with_ownership_;
    if (options_.position_averaging) RemoveDistinct(old);
    stored_ids_.erase(old.id);
    result.evicted.push_back(EvictedGame{old.id, old.n, old.location});
    RememberEvicted(std::move(old.id));
    games_.pop_front();
  }
  StoredGame& g = games_.emplace_back();
  g.id = record.game_id();
  g.location = location;
  g.first_position = next_position_;
  g.n = n;
  g.planes = record.planes();
  g.policy = record.policy();
  g.to_play = record.to_play();
  g.full_search = record.full_search();
  g.returns[0] = record.returns(0);
  g.returns[1] = record.returns(1);
  if (record.has_final_score()) {
    g.ownership = record.final_ownership();
    g.score = record.final_score();
    ++games_with_ownership_;
  }
  if (record.root_values_size() == n) {
    g.root_values.assign(record.root_values().begin(), record.root_values().end());
  }
  for (int64_t v : record.model_versions()) g.model_version = std::max(g.model_version, v);
  g.symmetries = InternSymmetries(record);
  if (options_.position_averaging) AddDistinct(g);
  next_position_ += n;
  num_positions_ += n;
  payload_bytes_ += g.PayloadBytes();
  stored_ids_.insert(g.id);
  return result;
}

bool Table::Contains(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  return stored_ids_.contains(id) || evicted_ids_.contains(id);
}

absl::Status Table::Sample(int batch_size, std::mt19937_64& rng, SampleBatch* batch) const {
  if (batch_size < 1) return absl::InvalidArgumentError("batch_size must be >= 1");
  absl::ReaderMutexLock lock(&mu_);
  if (games_.empty()) return absl::FailedPreconditionError("the table is empty");
  const Shape& shape = *shape_;
  const int64_t cells = static_cast<int64_t>(shape.height) * shape.width;
  const int64_t plane_values = shape.channels * cells;
  const int64_t a = shape.num_actions;

  batch->Clear();
  batch->set_batch_size(batch_size);
  batch->set_game(shape.game);
  batch->mutable_plane_shape()->set_channels(shape.channels);
  batch->mutable_plane_shape()->set_height(shape.height);
  batch->mutable_plane_shape()->set_width(shape.width);
  batch->set_num_actions(shape.num_actions);
  std::string* planes = batch->mutable_planes();
  std::string* policy = batch->mutable_policy();
  std::string* value = batch->mutable_value();
  std::string* mask = batch->mutable_policy_mask();
  std::string* search_value = batch->mutable_search_value();
  planes->resize(batch_size * plane_values);
  policy->resize(batch_size * a * 4);
  value->resize(batch_size * 4);
  search_value->resize(batch_size * 4);
  mask->resize(batch_size);
  // Ownership and score rows only while some stored game has them (Go); zeros and mask 0 for
  // rows whose game has none.
  const bool aux = games_with_ownership_ > 0;
  std::string* ownership = aux ? batch->mutable_ownership() : nullptr;
  std::string* score = aux ? batch->mutable_score() : nullptr;
  std::string* aux_mask = aux ? batch->mutable_aux_mask() : nullptr;
  if (aux) {
    ownership->assign(batch_size * cells, '\0');
    score->assign(batch_size * 4, '\0');
    aux_mask->assign(batch_size, '\0');
  }
  batch->mutable_model_version()->Reserve(batch_size);
  batch->mutable_position_age()->Reserve(batch_size);

  const int64_t oldest = games_.front().first_position;
  const bool averaging = options_.position_averaging;
  std::uniform_int_distribution<int64_t> pick(
      0, (averaging ? static_cast<int64_t>(distinct_.size()) : num_positions_) - 1);
  std::vector<float> mean_policy(averaging ? a : 0);
  for (int row = 0; row < batch_size; ++row) {
    const int64_t picked = pick(rng);
    const DistinctPosition* d = averaging ? &distinct_[picked] : nullptr;
    const int64_t global = averaging ? d->newest : oldest + picked;
    // The last game whose first position is <= global.
    auto it = std::upper_bound(games_.begin(), games_.end(), global,
                               [](int64_t x, const StoredGame& g) { return x < g.first_position; });
    const StoredGame& g = *std::prev(it);
    const int64_t i = global - g.first_position;

    const int num_syms = g.symmetries ? static_cast<int>(g.symmetries->action_maps.size()) : 0;
    int sym = -1;  // identity
    if (options_.apply_random_symmetry && num_syms > 0) {
      sym = static_cast<int>(std::uniform_int_distribution<int>(0, num_syms)(rng)) - 1;
    }
    const char* src_planes = g.planes.data() + i * plane_values;
    char* dst_planes = planes->data() + row * plane_values;
    const char* src_policy = g.policy.data() + i * a * 4;
    if (averaging && d->full_count > 0) {
      const double* sum = distinct_policy_.data() + picked * a;
      for (int64_t k = 0; k < a; ++k) {
        mean_policy[k] = static_cast<float>(sum[k] / d->full_count);
      }
      src_policy = reinterpret_cast<const char*>(mean_policy.data());
    }
    char* dst_policy = policy->data() + row * a * 4;
    if (sym < 0) {
      std::memcpy(dst_planes, src_planes, plane_values);
      std::memcpy(dst_policy, src_policy, a * 4);
    } else {
      const std::vector<int32_t>& cell_map = g.symmetries->cell_maps[sym];
      const std::vector<int32_t>& action_map = g.symmetries->action_maps[sym];
      for (int64_t c = 0; c < shape.channels; ++c) {
        for (int64_t k = 0; k < cells; ++k) {
          dst_planes[c * cells + cell_map[k]] = src_planes[c * cells + k];
        }
      }
      for (int64_t k = 0; k < a; ++k) {
        std::memcpy(dst_policy + action_map[k] * 4, src_policy + k * 4, 4);
      }
    }
    const uint8_t player = static_cast<uint8_t>(g.to_play[i]);
    const float v = averaging ? static_cast<float>(d->value_sum / d->count) : g.returns[player];
    std::memcpy(value->data() + row * 4, &v, 4);
    const float q = averaging ? static_cast<float>(d->search_value_sum / d->count)
                              : (g.root_values.empty() ? v : g.root_values[i]);
    std::memcpy(search_value->data() + row * 4, &q, 4);
    if (aux && !g.ownership.empty()) {
      // From player 0's side to the side of the player to move, under the planes' symmetry.
      const int8_t sign = player == 0 ? 1 : -1;
      char* dst = ownership->data() + row * cells;
      for (int64_t k = 0; k < cells; ++k) {
        const int64_t to = sym < 0 ? k : g.symmetries->cell_maps[sym][k];
        dst[to] = static_cast<char>(sign * static_cast<int8_t>(g.ownership[k]));
      }
      const float s = player == 0 ? g.score : -g.score;
      std::memcpy(score->data() + row * 4, &s, 4);
      (*aux_mask)[row] = 1;
    }
    (*mask)[row] = averaging ? (d->full_count > 0 ? 1 : 0) : g.full_search[i];
    batch->add_model_version(g.model_version);
    batch->add_position_age(next_position_ - (g.first_position + g.n));
  }
  return absl::OkStatus();
}

int64_t Table::num_positions() const {
  absl::MutexLock lock(&mu_);
  return num_positions_;
}

int64_t Table::num_games() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(games_.size());
}

int64_t Table::num_distinct_positions() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(distinct_.size());
}

int64_t Table::payload_bytes() const {
  absl::MutexLock lock(&mu_);
  return payload_bytes_;
}

std::optional<Table::Shape> Table::shape() const {
  absl::MutexLock lock(&mu_);
  return shape_;
}

}  // namespace zf::replay
