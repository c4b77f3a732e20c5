// An evaluation cache keyed by position hash: a decorator over another Evaluator (lc0-style).
//
// Table. A fixed number of slots (`capacity`), direct-mapped: a position with hash h lives in
// slot h % capacity, and inserting a position whose slot holds another evicts that one. Each
// slot keeps the 64-bit hash, the value and the NumActions() policy floats, so memory is
// capacity * (13 + 4 * NumActions()) bytes, allocated at the first use (when NumActions() is
// known) and never grown. Two different positions with equal Hash() would share an entry: the
// cache assumes, as games/game.h promises, that Hash() covers everything the evaluation
// depends on, and accepts the 2^-64 collision risk.
//
// Batches. Evaluate answers the hits from the table and forwards all misses of the batch to the
// wrapped evaluator in ONE call (a position that occurs several times in a batch is forwarded
// once), then stores the answers. Lookup/Insert expose the table for callers that evaluate
// asynchronously (an actor with requests in flight) and cannot use Evaluate.
//
// Ownership: does not own the wrapped evaluator, which must outlive it.
// Thread-safety: thread-compatible: one call at a time (the table and counters are state); a
// worker thread owns its cache.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "games/game.h"
#include "search/evaluator.h"
#include "search/evaluator_util.h"

namespace zf::search {

struct CachingEvaluatorOptions {
  // Number of slots; in [1, 2^30].
  int64_t capacity = int64_t{1} << 16;

  // Returns: OK; InvalidArgument if capacity is out of range.
  absl::Status Validate() const {
    if (capacity < 1 || capacity > (int64_t{1} << 30)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cache capacity must be in [1, 2^30], got ", capacity));
    }
    return absl::OkStatus();
  }
};

template <games::Game G>
class CachingEvaluator final : public Evaluator<G> {
 public:
  // Returns: InvalidArgument if `wrapped` is null or options.Validate() fails.
  static absl::StatusOr<std::unique_ptr<CachingEvaluator>> Create(
      Evaluator<G>* wrapped, const CachingEvaluatorOptions& options) {
    if (wrapped == nullptr) return absl::InvalidArgumentError("wrapped evaluator is null");
    absl::Status status = options.Validate();
    if (!status.ok()) return status;
    return std::unique_ptr<CachingEvaluator>(new CachingEvaluator(wrapped, options));
  }

  // Answers hits from the table and the misses with one call of the wrapped evaluator (none when
  // everything hits). Blocks for as long as the wrapped evaluator does.
  // Returns: OK; InvalidArgument if the spans have the wrong sizes or NumActions() differs from
  // the positions the cache has seen; the wrapped evaluator's error (nothing is stored then).
  absl::Status Evaluate(std::span<const G> positions, std::span<float> policies,
                        std::span<float> values) override {
    absl::Status status = internal::CheckEvaluateSpans(positions, policies, values);
    if (!status.ok()) return status;
    if (positions.empty()) return absl::OkStatus();
    const int num_actions = positions.front().NumActions();
    status = EnsureStorage(num_actions);
    if (!status.ok()) return status;
    const size_t n = positions.size();
    miss_positions_.clear();
    miss_index_.assign(n, -1);
    unique_misses_.clear();
    for (size_t i = 0; i < n; ++i) {
      const uint64_t hash = positions[i].Hash();
      if (Probe(hash, policies.subspan(i * num_actions, num_actions), &values[i])) {
        ++hits_;
        continue;
      }
      ++misses_;
      const auto [it, inserted] =
          unique_misses_.try_emplace(hash, static_cast<int>(miss_positions_.size()));
      if (inserted) miss_positions_.push_back(positions[i]);
      miss_index_[i] = it->second;
    }
    if (miss_positions_.empty()) return absl::OkStatus();
    const size_t m = miss_positions_.size();
    miss_policies_.resize(m * num_actions);
    miss_values_.resize(m);
    ++wrapped_calls_;
    forwarded_ += static_cast<int64_t>(m);
    status = wrapped_->Evaluate(miss_positions_, miss_policies_, miss_values_);
    if (!status.ok()) return status;
    const std::span<const float> miss_policies(miss_policies_);
    for (size_t j = 0; j < m; ++j) {
      Store(miss_positions_[j].Hash(), miss_policies.subspan(j * num_actions, num_actions),
            miss_values_[j]);
    }
    // Copy from the batch's answers, not the table: a later miss may have evicted an earlier one.
    for (size_t i = 0; i < n; ++i) {
      const int j = miss_index_[i];
      if (j < 0) continue;
      std::copy_n(&miss_policies_[static_cast<size_t>(j) * num_actions], num_actions,
                  &policies[i * num_actions]);
      values[i] = miss_values_[j];
    }
    return absl::OkStatus();
  }

  // Copies the cached answer for `position` into policy (NumActions() floats) and *value and
  // returns true, or returns false. Counts a hit or a miss. Requires policy.size() ==
  // NumActions() and the same NumActions() as earlier calls (ZF_CHECK).
  bool Lookup(const G& position, std::span<float> policy, float* value) {
    ZF_CHECK(EnsureStorage(position.NumActions()).ok()) << "cache used with two action counts";
    ZF_CHECK(static_cast<int>(policy.size()) == num_actions_) << "policy span size";
    const bool hit = Probe(position.Hash(), policy, value);
    ++(hit ? hits_ : misses_);
    return hit;
  }

  // Stores an answer for `position`, evicting whatever shared its slot. Same requirements as
  // Lookup.
  void Insert(const G& position, std::span<const float> policy, float value) {
    ZF_CHECK(EnsureStorage(position.NumActions()).ok()) << "cache used with two action counts";
    ZF_CHECK(static_cast<int>(policy.size()) == num_actions_) << "policy span size";
    Store(position.Hash(), policy, value);
  }

  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  // Positions forwarded to the wrapped evaluator (misses less in-batch duplicates) and calls.
  int64_t forwarded() const { return forwarded_; }
  int64_t wrapped_calls() const { return wrapped_calls_; }
  int64_t evictions() const { return evictions_; }
  // Occupied slots; never more than capacity().
  int64_t size() const { return size_; }
  int64_t capacity() const { return static_cast<int64_t>(capacity_); }
  // Bytes held by the table (0 before the first use).
  size_t TableBytes() const {
    return keys_.capacity() * sizeof(uint64_t) + used_.capacity() +
           (values_.capacity() + policies_.capacity()) * sizeof(float);
  }

 private:
  CachingEvaluator(Evaluator<G>* wrapped, const CachingEvaluatorOptions& options)
      : wrapped_(wrapped), capacity_(options.capacity) {}

  absl::Status EnsureStorage(int num_actions) {
    if (num_actions_ == num_actions) return absl::OkStatus();
    if (num_actions_ != 0) {
      return absl::InvalidArgumentError(absl::StrCat("positions have ", num_actions,
                                                     " actions; the cache holds ",
                                                     num_actions_));
    }
    num_actions_ = num_actions;
    const size_t slots = static_cast<size_t>(capacity_);
    keys_.assign(slots, 0);
    used_.assign(slots, 0);
    values_.assign(slots, 0.0f);
    policies_.assign(slots * static_cast<size_t>(num_actions), 0.0f);
    return absl::OkStatus();
  }

  size_t Slot(uint64_t hash) const { return static_cast<size_t>(hash % capacity_); }

  bool Probe(uint64_t hash, std::span<float> policy, float* value) const {
    const size_t slot = Slot(hash);
    if (!used_[slot] || keys_[slot] != hash) return false;
    std::copy_n(&policies_[slot * num_actions_], num_actions_, policy.data());
    *value = values_[slot];
    return true;
  }

  void Store(uint64_t hash, std::span<const float> policy, float value) {
    const size_t slot = Slot(hash);
    if (!used_[slot]) {
      used_[slot] = 1;
      ++size_;
    } else if (keys_[slot] != hash) {
      ++evictions_;
    }
    keys_[slot] = hash;
    values_[slot] = value;
    std::copy_n(policy.data(), num_actions_, &policies_[slot * num_actions_]);
  }

  Evaluator<G>* const wrapped_;
  const uint64_t capacity_;
  int num_actions_ = 0;  // 0 until the first use
  std::vector<uint64_t> keys_;
  std::vector<uint8_t> used_;
  std::vector<float> values_;
  std::vector<float> policies_;  // [capacity, num_actions]
  int64_t hits_ = 0;
  int64_t misses_ = 0;
  int64_t forwarded_ = 0;
  int64_t wrapped_calls_ = 0;
  int64_t evictions_ = 0;
  int64_t size_ = 0;
  // Per-call scratch.
  std::vector<G> miss_positions_;
  std::vector<int> miss_index_;
  absl::flat_hash_map<uint64_t, int> unique_misses_;
  std::vector<float> miss_policies_;
  std::vector<float> miss_values_;
};

}  // namespace zf::search
