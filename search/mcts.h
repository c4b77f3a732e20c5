// PUCT Monte Carlo tree search (AlphaZero) over one game tree, with a batched leaf API.
//
// Algorithm. Each simulation walks from the root to a leaf, choosing at node s the edge
//
//   a* = argmax_a  Q(s, a) + U(s, a),
//   U(s, a) = c(s) * P(s, a) * sqrt(max(1, N(s))) / (1 + N(s, a)),
//   c(s)    = c_puct                                        if c_puct_base == 0 (default),
//             c_puct + log((N(s) + c_puct_base + 1) / c_puct_base)   otherwise (AlphaZero),
//
// where N(s) = sum_b N(s, b) is the number of (real and virtual) visits of s's children, computed
// once per node (one sqrt per node, not per child), P(s, a) the prior, and
//
//   Q(s, a) = (W(s, a) - L * F(s, a)) / (N(s, a) + L * F(s, a))   if N(s, a) + F(s, a) > 0,
//   Q(s, a) = V(s) - fpu_reduction                                  otherwise (first play urgency),
//
// with W(s, a) the sum of backed-up values seen from the player who chooses at s, F(s, a) the
// number of simulations in flight through the edge (each counts as L = virtual_loss lost visits,
// so concurrent simulations of one batch spread over different leaves), and V(s) = W(s) / N(s)
// the mean value of s itself. Ties go to the lowest action.
//
// Values. The evaluator returns v in [-1, 1] for the player to move at the leaf; backup adds, at
// each node on the path, +v for nodes whose player to move is the leaf's player and -v for the
// other player (two-player zero-sum: Returns()[1] == -Returns()[0]). Signs follow ToPlay() of
// every node, never the depth parity, so games where a player moves twice in a row (Dots and
// Boxes) are handled. A terminal leaf is never sent to the evaluator: its exact value
// Returns()[player] is backed up at once (terminal shortcut), and every later visit to it backs
// up the same value.
//
// Expansion. A new leaf's priors are the evaluator's policy restricted to the legal actions and
// renormalised over them (uniform if that mass is not positive; negative or NaN entries count as
// 0; a NaN value counts as 0 and values are clamped to [-1, 1]). With add_noise, the root's
// priors become (1 - eps) * P + eps * Dir(alpha) once per root (after its expansion, or at the
// first collection after Advance when the new root is already expanded), from a seeded RNG.
//
// Forced playouts and policy target pruning (KataGo: Wu, "Accelerating Self-Play Learning in
// Go", 2019, section 3.1), with forced_playout_k = k > 0 and only in a search with root noise:
// at the root, a child c with fewer than n_forced(c) = sqrt(k * P(c) * N(root)) visits (real
// and virtual) is chosen before PUCT is asked (among several such children, the best PUCT
// score), so noise that finds a good move gets it searched. PolicyTarget then takes the forced
// visits out again: c* is the most visited child; every other child c keeps the fewest visits
// N'(c) >= N(c) - n_forced(c) for which its PUCT score (real Q, the root's N) stays below c*'s,
// and a child reduced to one visit is dropped. SelectAction samples from the same pruned counts
// (forced visits are exploration, not evidence; the most visited child is never pruned, so a
// temperature of 0 picks as before). The tree itself keeps every visit.
//
// Score utility (KataGo: Wu, "Accelerating Self-Play Learning in Go", 2019, score maximization;
// simplified: a fixed center per search and the expected score, not its distribution), with
// score_utility = lambda > 0: a leaf evaluated with a score s (the expected final margin of its
// player to move, in points / sqrt(board cells), as the network's score head gives it) backs
// up, next to its value v, the utility
//
//   u = lambda * (2 / pi) * atan((s0 - c0) / score_utility_scale)   for player 0, -u for player 1,
//
// where s0 is s seen from player 0 and c0 the score center: the mean score (player 0's view)
// of the leaves the previous search had evaluated (terminal leaves are not evaluated and do not
// count), carried over by Advance, or, for a new root (SetRoot), the root's own score.
// Centering on what the search already expects keeps the utility steep where the game is, so a
// won or lost position still plays for points. Edges and nodes keep the sums of u apart from
// those of v: Q(s, a) and V(s) above use (W + U) / N, while RootValue, ChildStats::value and
// so resignation see the win/loss value alone. A terminal leaf of a game with a final score
// (games::GameWithFinalOwnership) backs up the utility of that score once a center is known; a
// leaf without a score (NaN: an evaluator without a score head, a terminal of another game)
// and any leaf before the first evaluated score back up u = 0, so with an evaluator that never
// gives scores the search is the same as without score utility. Sums kept by tree reuse were
// taken with the center of their search.
//
// Lower-confidence-bound move choice (KataGo's LCB, in our own form), with lcb_stdevs = z > 0:
// BestAction takes, among the root children with at least lcb_min_visit_fraction of the most
// visited child's visits (the most visited one always among them), the one with the highest
//
//   LCB(a) = Q(s, a) - z * sqrt(var(a) / N(s, a)),
//   var(a) = (sum of (v + u - Q)^2 over a's visits + k0 * s0^2) / (N(s, a) + k0),  k0 = 1,
//            s0^2 = 0.25,
//
// Q(s, a) including the score utility as in the selection above, and the per-visit value v + u
// seen from the root's player (each edge keeps the sum of its squares). The prior term keeps a
// child with a few equal values from counting as certain. A child that searched well but was
// found late (so got fewer visits) is played when its lower bound beats the most visited one's;
// policy targets, SelectAction and self-play are unchanged. 0 (default): the most visited.
// Eligibility counts raw visits, forced playouts included (players search without noise, so
// they force none). RootChildren stays in edge order; a list sorted by visits need not put the
// move BestAction plays first.
//
// Gumbel root search (Danihelka et al., "Policy improvement by planning with Gumbel", ICLR
// 2022; our own code after the paper and the mctx library's defaults), with
// gumbel_considered_actions = m > 0. It replaces PUCT at the root only (below it PUCT chooses
// as above); the rest of the tree is unchanged. Notation for a root child a: logit(a) =
// log P(a) (the clean priors: Dirichlet noise is never applied in this mode), g(a) a
// Gumbel(0, 1) draw, made once per root when the search has noise (add_noise; 0 otherwise),
// N(a) its visits, and the completed value
//
//   q(a) = (W(a) + U(a)) / N(a) if N(a) > 0, else the root's own mean value (W + U) / N,
//
// (utility included, from the root's player), rescaled to [0, 1] over the children,
// q^(a) = (q(a) - min q) / (max q - min q) (0 for every child when the spread is below 1e-5,
// float rounding of equal values; mctx divides by max(spread, 1e-8) instead, which gives such
// a rounding difference a full-strength sigma), and sigma(a) = (c_visit + max_b N(b)) *
// c_scale * q^(a). (The paper fills unvisited children with a mix of the network's value and
// the visited children's values; the root's mean value is that mix weighted by visits rather
// than priors, and needs no extra field per node.)
//  - Sequential halving: the search's simulations (the budget less the root's visits when it
//    began, so visits kept by tree reuse are not redone) follow mctx's schedule for m' =
//    min(m, root children) actions: phases of ceil(log2 m') halvings, each giving every
//    remaining action max(1, floor(n / (ceil(log2 m') * remaining))) more visits, the remaining
//    set halving to at least 2. Each simulation goes to the child with the highest
//    g + logit + sigma among those whose visits in this search (in flight included) equal the
//    schedule's level for that simulation: the first m' simulations visit the top m' by
//    g + logit (Gumbel-top-k sampling without replacement; by g + logit + sigma when tree
//    reuse kept visits, whose values sigma already knows), later phases the best half. A
//    collection round stops at a halving while leaves are in flight (MctsStats::
//    gumbel_halving_waits), so the halving sees every value of the phase before it; within
//    a phase the leaves in flight count as visits and the batch keeps the schedule's levels.
//  - SelectAction returns the winner: among the children with the most visits of this search,
//    the highest g + logit + sigma; temperature is not used (the Gumbel draws are the
//    randomness). When the search ran no simulation of its own (kept visits met the budget),
//    every child is a candidate and, when the search has noise or temperature > 0, g is the
//    root's draws or, if it has none, drawn from the caller's rng: a sample of the improved
//    policy below (with neither, its mode).
//  - PolicyTarget is the improved policy softmax(logit + sigma) over the root's children
//    (every child, visited or not), not the visit distribution.
//  - BestAction, RootChildren, RootValue and the LCB are unchanged.
// Forced playouts are a root rule of PUCT and cannot be combined with it (Validate).
//
// Batching and collisions. CollectLeaves runs simulations until it has max_leaves leaves that
// need an evaluation, the budget is reached, a collision: a walk that ends on a leaf already
// waiting for its evaluation, or (Gumbel root search) a halving with leaves in flight. Virtual loss
// is applied only to walks that produced a leaf, so after a collision the tree is unchanged and the
// next walk would collide again: the round stops there (counted in MctsStats::collisions) and
// continues after the pending evaluations are applied. Terminal leaves reached during collection
// are backed up immediately.
//
// Budget. Done() when the root has been visited num_simulations times (visits kept by tree reuse
// count) or the root is terminal. Collection never puts more simulations in flight than the
// budget leaves, so Done() implies that no leaf is pending.
//
// Memory. Nodes and edges live in two std::vector arenas addressed by 32-bit indices, reserved
// once per search and reused by later searches (clear() keeps the capacity). A node's edges
// (prior, visit and value statistics, action, child index) are contiguous, so choosing an edge
// scans one small array and touches no child node. Child nodes are created on first traversal.
// Positions are not stored per node: a leaf's position is rebuilt by copying the root and
// applying the path's actions, which for these games (trivially copyable values of 40-80 bytes
// with an Apply of a few nanoseconds) costs less than storing a position per node would in
// memory traffic, and keeps nodes at 36 bytes whatever the game. Advance(action) compacts the
// chosen child's subtree into the front of a second pair of arenas (breadth first, so siblings
// stay adjacent) and swaps them, discarding everything else.
//
// Thread-compatibility: thread-compatible. One thread at a time may call the mutating methods;
// const methods may run concurrently with each other.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "games/game.h"
#include "search/evaluator.h"

namespace zf::search {

struct MctsOptions {
  // Root visits at which Done() becomes true (visits kept by tree reuse count). >= 1.
  int num_simulations = 200;
  // c_init of the exploration coefficient; > 0.
  float c_puct = 1.5f;
  // 0 (default): c(s) = c_puct, constant. > 0: AlphaZero's growth
  // c(s) = c_puct + log((N(s) + c_puct_base + 1) / c_puct_base), e.g. 19652.
  float c_puct_base = 0.0f;
  // Unvisited children are valued V(parent) - fpu_reduction; finite (may be negative).
  float fpu_reduction = 0.25f;
  // Lost visits each in-flight simulation counts for on its path; >= 1.
  int virtual_loss = 1;
  // Dirichlet noise on the root priors.
  bool add_noise = false;
  float dirichlet_alpha = 0.3f;     // > 0
  float dirichlet_epsilon = 0.25f;  // in [0, 1]
  // Seeds the noise (the only randomness of the search itself).
  uint64_t seed = 0;
  // Forced playouts and policy target pruning at the root of searches with noise (see above);
  // KataGo uses 2. 0 (default): off. Finite, >= 0.
  float forced_playout_k = 0.0f;
  // Score utility (see above): lambda, 0 (default) off; in [0, 1], so the score never outweighs
  // a win (values are in [-1, 1]). KataGo's self-play uses 0.3 or so.
  float score_utility = 0.0f;
  // The score difference (in the score's unit, points / sqrt(board cells)) at which the
  // utility reaches half of lambda; finite, > 0.
  float score_utility_scale = 1.0f;
  // LCB move choice for BestAction (see above): the number of standard errors z, 0 (default) off;
  // finite, >= 0. KataGo plays with 5.
  float lcb_stdevs = 0.0f;
  // The fewest visits, as a fraction of the most visited child's, for a child to be chosen by
  // its LCB; in [0, 1]. KataGo uses 0.15.
  float lcb_min_visit_fraction = 0.15f;
  // Gumbel root search (see above): m, the actions sequential halving starts from, 0 (default)
  // off; 0..32767. The paper uses 16 for Go.
  int gumbel_considered_actions = 0;
  // sigma's c_visit (finite, >= 0) and c_scale (finite, > 0); mctx's defaults.
  float gumbel_c_visit = 50.0f;
  float gumbel_c_scale = 0.1f;

  // Returns: OK; InvalidArgument naming the first field out of range.
  absl::Status Validate() const;
};

// A leaf that needs an evaluation: its position and where it hangs in its tree. Produced by
// Mcts::CollectLeaves; pass it back, unchanged, to ApplyEvaluation (or CancelLeaf) of the same
// search before that search's root changes.
template <games::Game G>
struct PendingLeaf {
  G position;
  int32_t node = -1;
};

// Counters over the life of one Mcts.
struct MctsStats {
  int64_t evaluations = 0;       // leaves expanded by ApplyEvaluation
  int64_t terminal_backups = 0;  // simulations ended on a terminal position (not evaluated)
  int64_t collisions = 0;        // collection rounds stopped by a pending leaf
  int64_t cancelled = 0;         // leaves given back with CancelLeaf
  // Gumbel root search: root choices that found no child at the schedule's level and fell
  // back to PUCT (never expected), and collection rounds stopped at a halving so that it
  // chooses with every value of the phase before it backed up.
  int64_t gumbel_puct_fallbacks = 0;
  int64_t gumbel_halving_waits = 0;
};

// One root child as the search sees it.
struct ChildStats {
  int action = -1;
  float prior = 0.0f;  // after noise, if any
  int visits = 0;
  float value = 0.0f;  // mean value (win/loss only) for the player to move at the root; 0 when
                       // unvisited
};

namespace internal {

enum class NodeState : uint8_t {
  kNew = 0,       // created, position not looked at yet
  kPending = 1,   // waiting for an evaluation
  kExpanded = 2,  // has edges
  kTerminal = 3,  // game over; terminal_value0 is Returns()[0]
};

struct Node {
  int32_t first_edge = -1;
  int32_t parent = -1;       // node index; -1 at the root
  int32_t parent_edge = -1;  // edge index in the parent's edges
  int32_t n = 0;             // completed visits (own evaluation + backups through it)
  int32_t in_flight = 0;     // simulations in flight through (or waiting at) this node
  float w = 0.0f;            // sum of values for to_play
  // Sum of score utilities for to_play; for a kTerminal node instead its final score from
  // player 0's view (NaN when the game has none), from which each visit's utility is computed.
  float u = 0.0f;
  float terminal_value0 = 0.0f;
  int16_t num_edges = 0;
  int8_t to_play = 0;
  NodeState state = NodeState::kNew;
};
static_assert(sizeof(Node) == 36);

struct Edge {
  float prior = 0.0f;
  float w = 0.0f;      // sum of values for the player to move at the parent
  float u = 0.0f;      // sum of score utilities for the player to move at the parent
  float w2 = 0.0f;     // sum of the squares of each visit's value + utility (for the LCB)
  int32_t n = 0;       // completed visits
  int32_t child = -1;  // node index, -1 until first traversed
  int16_t action = 0;
  int16_t in_flight = 0;
};
static_assert(sizeof(Edge) == 28);

// Reusable buffers of one collect/evaluate/apply loop.
template <games::Game G>
struct BatchScratch {
  std::vector<PendingLeaf<G>> leaves;
  std::vector<int> owners;
  std::vector<G> positions;
  std::vector<float> policies;
  std::vector<float> values;
  std::vector<float> scores;
};

// Collects leaves from every search that is not done (done(search) says), evaluates them in one
// Evaluate call per round (EvaluateWithScores when a search WantsScores()), applies the
// results, until every search is done. Shared by Mcts::Run, RunBatched and the self-play
// helpers.
template <games::Game G, typename Search, typename DoneFn>
absl::Status RunRounds(std::span<Search* const> searches, Evaluator<G>& evaluator,
                       int leaves_per_search, DoneFn done, BatchScratch<G>& s) {
  if (leaves_per_search < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("leaves per search must be >= 1, got ", leaves_per_search));
  }
  for (Search* search : searches) {
    if (search->NumPending() != 0) {
      return absl::FailedPreconditionError("a search has leaves pending from another caller");
    }
  }
  while (true) {
    s.leaves.clear();
    s.owners.clear();
    bool any_active = false;
    for (size_t i = 0; i < searches.size(); ++i) {
      if (done(*searches[i])) continue;
      any_active = true;
      const int n = searches[i]->CollectLeaves(leaves_per_search, &s.leaves);
      s.owners.insert(s.owners.end(), n, static_cast<int>(i));
    }
    if (!any_active) return absl::OkStatus();
    if (s.leaves.empty()) {
      // With nothing pending, collection either yields a leaf or backs up terminals until the
      // budget is reached, so an empty round means every search is done now.
      for (Search* search : searches) {
        if (!done(*search)) return absl::InternalError("search made no progress");
      }
      return absl::OkStatus();
    }
    const int num_actions = s.leaves.front().position.NumActions();
    const size_t n = s.leaves.size();
    s.positions.clear();
    for (const PendingLeaf<G>& leaf : s.leaves) s.positions.push_back(leaf.position);
    s.policies.resize(n * num_actions);
    s.values.resize(n);
    const bool wants_scores = std::any_of(searches.begin(), searches.end(),
                                          [](const Search* x) { return x->WantsScores(); });
    s.scores.assign(n, std::numeric_limits<float>::quiet_NaN());
    const absl::Status status =
        wants_scores ? evaluator.EvaluateWithScores(s.positions, s.policies, s.values, s.scores)
                     : evaluator.Evaluate(s.positions, s.policies, s.values);
    if (!status.ok()) {
      for (size_t i = 0; i < n; ++i) searches[s.owners[i]]->CancelLeaf(s.leaves[i]);
      return status;
    }
    const std::span<const float> policies(s.policies);
    for (size_t i = 0; i < n; ++i) {
      searches[s.owners[i]]->ApplyEvaluation(
          s.leaves[i], policies.subspan(i * num_actions, num_actions), s.values[i], s.scores[i]);
    }
  }
}

}  // namespace internal

// PUCT search over one game tree (see the top of this file).
// Ownership: owns its tree and a copy of the root position. Thread-compatible.
template <games::Game G>
class Mcts {
 public:
  // A search rooted at `root`.
  // Returns: InvalidArgument if options.Validate() fails or the game has more than 32767
  // actions.
  static absl::StatusOr<std::unique_ptr<Mcts>> Create(const G& root, const MctsOptions& options) {
    absl::Status status = options.Validate();
    if (!status.ok()) return status;
    if (root.NumActions() < 1 || root.NumActions() > std::numeric_limits<int16_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat("NumActions() must be in [1, 32767], got ", root.NumActions()));
    }
    return std::unique_ptr<Mcts>(new Mcts(root, options));
  }

  Mcts(const Mcts&) = delete;
  Mcts& operator=(const Mcts&) = delete;

  // Discards the tree and starts a new one at `game` (which must have the same NumActions()).
  // Requires NumPending() == 0 (ZF_CHECK).
  void SetRoot(const G& game) {
    ZF_CHECK(NumPending() == 0) << "SetRoot with " << NumPending() << " leaves pending";
    ZF_CHECK(game.NumActions() == num_actions_) << "SetRoot: different NumActions()";
    root_game_ = game;
    ResetTree();
    score_center0_ = kNoScore;
  }

  // Plays `action` at the root and keeps the chosen child's subtree (its visit counts and
  // values) as the new tree; everything else is discarded and its memory reused. If the child
  // was never expanded the new tree is empty. Requires NumPending() == 0 and a legal action
  // (ZF_CHECK).
  void Advance(int action) {
    ZF_CHECK(NumPending() == 0) << "Advance with " << NumPending() << " leaves pending";
    ZF_CHECK(root_game_.IsLegal(action)) << "Advance: illegal action " << action;
    if (search_scores_ > 0) {
      score_center0_ = static_cast<float>(search_score_sum0_ / static_cast<double>(search_scores_));
    }
    search_score_sum0_ = 0.0;
    search_scores_ = 0;
    root_game_.Apply(action);
    int32_t child = -1;
    const Node& root = nodes_[kRoot];
    if (root.state == NodeState::kExpanded) {
      for (int i = 0; i < root.num_edges; ++i) {
        const Edge& e = edges_[root.first_edge + i];
        if (e.action == action) {
          child = e.child;
          break;
        }
      }
    }
    if (child < 0 || nodes_[child].state == NodeState::kNew) {
      ResetTree();
      return;
    }
    CompactSubtree(child);
    root_score_sum0_.clear();  // the new root's children's scores were not kept
    root_score_n_.clear();
    root_noised_ = false;
    gumbel_ready_ = false;
  }

  // Root visits at which Done() becomes true from now on (initially options.num_simulations).
  // Requires num_simulations >= 1 and NumPending() == 0 (ZF_CHECK).
  void SetSimulationBudget(int num_simulations) {
    ZF_CHECK(num_simulations >= 1) << "simulation budget " << num_simulations;
    ZF_CHECK(NumPending() == 0) << "SetSimulationBudget with " << NumPending() << " leaves pending";
    budget_ = num_simulations;
    gumbel_ready_ = false;  // a new search: sequential halving starts again
    Reserve();
  }
  int simulation_budget() const { return budget_; }

  // Turns root noise on or off for the current and later roots. Turning it on for a root that
  // was already noised does not noise it again; turning it off does not undo noise applied.
  void SetAddNoise(bool add_noise) { add_noise_ = add_noise; }

  // True when the root is terminal or has been visited simulation_budget() times.
  bool Done() const {
    const Node& root = nodes_[kRoot];
    return root.state == NodeState::kTerminal || root.n >= budget_;
  }

  // Runs simulations, appending to *out up to max_leaves leaves that need an evaluation, and
  // returns how many it appended. Stops early at a collision, at a Gumbel halving with leaves
  // in flight, at the budget, or when Done(), and never holds more than 32767 leaves pending
  // (so it may return 0 while leaves are pending: apply them and collect again).
  // Each leaf holds virtual loss on its path until ApplyEvaluation or CancelLeaf.
  int CollectLeaves(int max_leaves, std::vector<PendingLeaf<G>>* out) {
    if (nodes_[kRoot].state == NodeState::kExpanded) {
      if (Gumbel()) {
        if (!gumbel_ready_) PrepareGumbelSearch();
      } else if (add_noise_ && !root_noised_) {
        AddRootNoise();
      }
    }
    int added = 0;
    while (added < max_leaves) {
      const Node& root = nodes_[kRoot];
      if (root.state == NodeState::kTerminal || root.n + root.in_flight >= budget_) break;
      if (root.in_flight >= kMaxPending) break;  // edges count in-flight visits in 16 bits
      if (gumbel_ready_ && root.in_flight > 0 && AtGumbelHalving()) {
        ++stats_.gumbel_halving_waits;
        break;
      }
      path_.clear();
      int32_t node = kRoot;
      while (nodes_[node].state == NodeState::kExpanded) {
        const int32_t ei = node == kRoot && gumbel_ready_
                               ? SelectGumbelRootEdge()
                               : SelectEdge(nodes_[node], /*at_root=*/node == kRoot);
        path_.push_back(edges_[ei].action);
        int32_t child = edges_[ei].child;
        if (child < 0) {
          child = NewNode(node, ei);
          edges_[ei].child = child;
        }
        node = child;
      }
      Node& leaf = nodes_[node];
      if (leaf.state == NodeState::kTerminal) {
        Backup(node, leaf.terminal_value0, Utility0(leaf.u), /*remove_virtual_loss=*/false);
        ++stats_.terminal_backups;
        continue;
      }
      if (leaf.state == NodeState::kPending) {
        ++stats_.collisions;
        break;
      }
      // kNew: rebuild the position from the root.
      G game = root_game_;
      for (const int action : path_) game.Apply(action);
      if (game.IsTerminal()) {
        const games::Returns returns = game.Returns();
        ZF_DCHECK(returns[1] == -returns[0]) << "search assumes a zero-sum game";
        leaf.state = NodeState::kTerminal;
        leaf.terminal_value0 = returns[0];
        leaf.u = WantsScores() ? FinalScore0(game) : kNoScore;
        Backup(node, returns[0], Utility0(leaf.u), /*remove_virtual_loss=*/false);
        ++stats_.terminal_backups;
        continue;
      }
      leaf.state = NodeState::kPending;
      leaf.to_play = static_cast<int8_t>(game.ToPlay());
      AddVirtualLoss(node);
      out->push_back(PendingLeaf<G>{std::move(game), node});
      ++added;
    }
    return added;
  }

  // Expands `leaf` with `policy` (NumActions() floats; only legal actions are used, renormalised)
  // and backs up `value` and, with score utility on, the utility of `score` (both for the
  // player to move at the leaf; score in points / sqrt(board cells), NaN for none), removing
  // the leaf's virtual loss. Requires a leaf from this search's CollectLeaves since the last
  // root change, not yet applied or cancelled, and policy.size() == NumActions() (ZF_CHECK).
  void ApplyEvaluation(const PendingLeaf<G>& leaf, std::span<const float> policy, float value,
                       float score = kNoScore) {
    ZF_CHECK(static_cast<int>(policy.size()) == num_actions_)
        << "policy has " << policy.size() << " entries, want " << num_actions_;
    ZF_CHECK(leaf.node >= 0 && leaf.node < static_cast<int32_t>(nodes_.size()) &&
             nodes_[leaf.node].state == NodeState::kPending)
        << "ApplyEvaluation on a leaf that is not pending";
    leaf.position.LegalActions(&legal_);
    ZF_DCHECK(!legal_.empty()) << "non-terminal position without legal actions";
    const int32_t first = static_cast<int32_t>(edges_.size());
    const int k = static_cast<int>(legal_.size());
    edges_.resize(edges_.size() + k);
    Edge* edges = &edges_[first];
    float sum = 0.0f;
    for (int i = 0; i < k; ++i) {
      const float p = policy[legal_[i]];
      const float clean = p > 0.0f ? p : 0.0f;  // also maps NaN to 0
      edges[i].prior = clean;
      edges[i].action = static_cast<int16_t>(legal_[i]);
      sum += clean;
    }
    if (sum > 0.0f && std::isfinite(sum)) {
      const float inv = 1.0f / sum;
      for (int i = 0; i < k; ++i) edges[i].prior *= inv;
    } else {
      const float uniform = 1.0f / static_cast<float>(k);
      for (int i = 0; i < k; ++i) edges[i].prior = uniform;
    }
    Node& node = nodes_[leaf.node];
    node.first_edge = first;
    node.num_edges = static_cast<int16_t>(k);
    node.state = NodeState::kExpanded;
    if (std::isnan(value)) value = 0.0f;
    value = std::clamp(value, -1.0f, 1.0f);
    float utility0 = 0.0f;
    if (WantsScores() && std::isfinite(score)) {
      const float score0 = node.to_play == 0 ? score : -score;
      if (std::isnan(score_center0_)) score_center0_ = score0;  // a new root's own score
      search_score_sum0_ += score0;
      ++search_scores_;
      utility0 = Utility0(score0);
      if (report_scores_) AddRootChildScore(leaf.node, score0);
    }
    Backup(leaf.node, node.to_play == 0 ? value : -value, utility0, /*remove_virtual_loss=*/true);
    ++stats_.evaluations;
  }

  // Gives a pending leaf back without an evaluation (e.g. its request failed): removes its
  // virtual loss; a later collection may select it again. Same requirements as ApplyEvaluation.
  // With Gumbel root search give back all the pending leaves or none: cancelling some can
  // leave no root child at the schedule's next level, and the root then falls back to PUCT
  // (MctsStats::gumbel_puct_fallbacks).
  void CancelLeaf(const PendingLeaf<G>& leaf) {
    ZF_CHECK(leaf.node >= 0 && leaf.node < static_cast<int32_t>(nodes_.size()) &&
             nodes_[leaf.node].state == NodeState::kPending)
        << "CancelLeaf on a leaf that is not pending";
    nodes_[leaf.node].state = NodeState::kNew;
    for (int32_t x = leaf.node; x >= 0; x = nodes_[x].parent) {
      Node& nd = nodes_[x];
      --nd.in_flight;
      if (nd.parent_edge >= 0) --edges_[nd.parent_edge].in_flight;
    }
    ++stats_.cancelled;
  }

  // Collects, evaluates (one Evaluate call per round of up to batch_size leaves) and applies
  // until Done(). Blocks for as long as the evaluator does.
  // Returns: OK; InvalidArgument if batch_size < 1; FailedPrecondition if leaves are pending;
  // the evaluator's error (the round's leaves are cancelled, the tree stays usable).
  absl::Status Run(Evaluator<G>& evaluator, int batch_size = 1) {
    Mcts* self = this;
    return internal::RunRounds<G>(
        std::span<Mcts* const>(&self, 1), evaluator, batch_size,
        [](const Mcts& m) { return m.Done(); }, scratch_);
  }

  // Visit counts of the root's children, indexed by action (size NumActions()).
  std::vector<int> VisitCounts() const {
    std::vector<int> counts(num_actions_, 0);
    ForEachRootEdge([&](const Edge& e) { counts[e.action] = e.n; });
    return counts;
  }

  // Visit counts of the children of the root's child reached by `action` (size NumActions();
  // zeros where that child is not expanded). What VisitCounts() returns after Advance(action).
  std::vector<int> ChildVisitCounts(int action) const {
    std::vector<int> counts(num_actions_, 0);
    ForEachRootEdge([&](const Edge& e) {
      if (e.action != action || e.child < 0) return;
      const Node& child = nodes_[e.child];
      if (child.state != NodeState::kExpanded) return;
      for (int i = 0; i < child.num_edges; ++i) {
        const Edge& g = edges_[child.first_edge + i];
        counts[g.action] = g.n;
      }
    });
    return counts;
  }

  // The visit distribution over actions (size NumActions(), sums to 1). Before any child has
  // been visited: the root priors if the root is expanded, else uniform over legal actions.
  // With Gumbel root search and an expanded root instead the improved policy
  // softmax(logit + sigma) (see above). Requires a non-terminal root (ZF_CHECK).
  std::vector<float> PolicyTarget() const {
    std::vector<float> target(num_actions_, 0.0f);
    PolicyTarget(target);
    return target;
  }
  // The same, written into `out` (size NumActions(), ZF_CHECK).
  void PolicyTarget(std::span<float> out) const {
    ZF_CHECK(static_cast<int>(out.size()) == num_actions_) << "PolicyTarget span size";
    ZF_CHECK(nodes_[kRoot].state != NodeState::kTerminal) << "PolicyTarget at a terminal root";
    std::fill(out.begin(), out.end(), 0.0f);
    if (Gumbel() && nodes_[kRoot].state == NodeState::kExpanded) {
      ImprovedPolicy(out);
      return;
    }
    int64_t total = 0;
    ForEachRootEdge([&](const Edge& e) { total += e.n; });
    if (total > 0 && ForcesPlayouts()) {
      PrunedVisits(total, out);
      double pruned_total = 0.0;
      for (const float v : out) pruned_total += v;
      const float inv = 1.0f / static_cast<float>(pruned_total);
      for (float& v : out) v *= inv;
    } else if (total > 0) {
      const float inv = 1.0f / static_cast<float>(total);
      ForEachRootEdge([&](const Edge& e) { out[e.action] = static_cast<float>(e.n) * inv; });
    } else if (nodes_[kRoot].state == NodeState::kExpanded) {
      ForEachRootEdge([&](const Edge& e) { out[e.action] = e.prior; });
    } else {
      std::vector<int> legal;
      root_game_.LegalActions(&legal);
      for (const int a : legal) out[a] = 1.0f / static_cast<float>(legal.size());
    }
  }

  // The root's mean value (win/loss only, without score utility) for its player to move, in
  // [-1, 1]; 0 before the first visit and at a terminal root (whose outcome
  // root_position().Returns() gives).
  float RootValue() const {
    const Node& root = nodes_[kRoot];
    if (root.state == NodeState::kTerminal || root.n == 0) return 0.0f;
    return root.w / static_cast<float>(root.n);
  }

  // The root's children (legal actions, increasing); empty before the root is expanded.
  std::vector<ChildStats> RootChildren() const {
    std::vector<ChildStats> children;
    ForEachRootEdge([&](const Edge& e) {
      children.push_back({e.action, e.prior, e.n, e.n > 0 ? e.w / static_cast<float>(e.n) : 0.0f});
    });
    return children;
  }

  // The most visited root action; ties go to the higher prior, then the lower action. With
  // lcb_stdevs > 0 instead the eligible child with the highest lower confidence bound (see
  // above); ties in the bound go to the more visited, then to the most visited child, then to
  // the lower action. Requires an expanded root (ZF_CHECK).
  int BestAction() const {
    ZF_CHECK(nodes_[kRoot].state == NodeState::kExpanded) << "BestAction before expansion";
    const Edge& most = MostVisitedRootEdge();
    if (options_.lcb_stdevs <= 0.0f || most.n == 0) return most.action;
    // A relative tolerance keeps a child at exactly the fraction eligible despite float
    // rounding (0.15f * 100 is a hair above 15).
    const int64_t min_visits = static_cast<int64_t>(
        std::ceil(static_cast<double>(options_.lcb_min_visit_fraction) * most.n * (1.0 - 1e-6)));
    const Edge* best = &most;
    float best_lcb = LowerConfidenceBound(most);
    ForEachRootEdge([&](const Edge& e) {
      if (&e == &most || e.n == 0 || e.n < min_visits) return;
      const float lcb = LowerConfidenceBound(e);
      if (lcb > best_lcb || (lcb == best_lcb && e.n > best->n)) {
        best = &e;
        best_lcb = lcb;
      }
    });
    return best->action;
  }

  // A visited root child's lower confidence bound of its mean value + utility for the root's
  // player (see the LCB above; with any lcb_stdevs); -infinity for an unvisited one.
  float RootLowerConfidenceBound(int action) const {
    return RootLowerConfidenceBound(action, options_.lcb_stdevs);
  }
  // The same bound `stdevs` standard errors below the mean (analysis reports it at a fixed z
  // whatever lcb_stdevs the move choice uses).
  float RootLowerConfidenceBound(int action, float stdevs) const {
    float out = -std::numeric_limits<float>::infinity();
    ForEachRootEdge([&](const Edge& e) {
      if (e.action == action && e.n > 0) out = LowerBound(e, stdevs);
    });
    return out;
  }

  // Samples a root action: temperature <= 0 takes the most visited (uniformly random among
  // ties); otherwise action a with probability proportional to N(root, a)^(1 / temperature),
  // with the pruned visits when the search forced playouts (see above). Before any child
  // visit, the priors take the place of the visits. Requires an expanded
  // root (ZF_CHECK). Rng is a UniformRandomBitGenerator (e.g. std::mt19937_64). With Gumbel
  // root search instead the winner of sequential halving (see above; rng is used only when the
  // search ran no simulation of its own, the root has no Gumbel draws, and the search has
  // noise or temperature > 0).
  template <typename Rng>
  int SelectAction(float temperature, Rng& rng) const {
    const Node& root = nodes_[kRoot];
    ZF_CHECK(root.state == NodeState::kExpanded) << "SelectAction before expansion";
    if (Gumbel()) return GumbelWinner(temperature, rng);
    const Edge* edges = &edges_[root.first_edge];
    const int k = root.num_edges;
    int max_n = 0;
    int64_t total_n = 0;
    for (int i = 0; i < k; ++i) {
      max_n = std::max(max_n, edges[i].n);
      total_n += edges[i].n;
    }
    std::vector<float> pruned;
    if (max_n > 0 && ForcesPlayouts()) {
      pruned.assign(num_actions_, 0.0f);
      PrunedVisits(total_n, pruned);
    }
    // Visits (pruned ones when forcing), or the priors before any visit, as non-negative weights.
    auto weight = [&](int i) {
      if (!pruned.empty()) return static_cast<double>(pruned[edges[i].action]);
      return max_n > 0 ? static_cast<double>(edges[i].n) : static_cast<double>(edges[i].prior);
    };
    double max_w = 0.0;
    for (int i = 0; i < k; ++i) max_w = std::max(max_w, weight(i));
    if (temperature <= 0.0f || max_w <= 0.0) {
      int ties = 0;
      for (int i = 0; i < k; ++i) ties += weight(i) == max_w;
      int pick = std::uniform_int_distribution<int>(0, ties - 1)(rng);
      for (int i = 0; i < k; ++i) {
        if (weight(i) == max_w && pick-- == 0) return edges[i].action;
      }
    }
    const double inv_t = 1.0 / static_cast<double>(temperature);
    double total = 0.0;
    for (int i = 0; i < k; ++i) total += std::pow(weight(i) / max_w, inv_t);
    double r = std::uniform_real_distribution<double>(0.0, total)(rng);
    int last_positive = 0;
    for (int i = 0; i < k; ++i) {
      const double p = std::pow(weight(i) / max_w, inv_t);
      if (p <= 0.0) continue;
      last_positive = i;
      if (r < p) return edges[i].action;
      r -= p;
    }
    return edges[last_positive].action;  // rounding left r >= 0 after the last weight
  }

  // Completed root visits, including those kept by tree reuse.
  int RootVisits() const { return nodes_[kRoot].n; }
  // Leaves collected and neither applied nor cancelled.
  int NumPending() const { return nodes_[kRoot].in_flight; }
  int NumNodes() const { return static_cast<int>(nodes_.size()); }
  int NumEdges() const { return static_cast<int>(edges_.size()); }
  const G& root_position() const { return root_game_; }
  const MctsOptions& options() const { return options_; }
  const MctsStats& stats() const { return stats_; }
  // Whether the search reads scores (score utility on): RunRounds asks the evaluator for them
  // only then.
  bool WantsScores() const { return options_.score_utility > 0.0f || report_scores_; }

  // Reporting scores: asks the evaluator for scores even with score utility off, and keeps each
  // root child's mean score (RootChildScore0) and the search's (RootScore0), what analysis (GTP
  // kata-analyze's scoreLead) reports. Does not change the search. Off at the start; set it
  // before the root's first simulation (sums start at the next SetRoot or Advance).
  void SetReportScores(bool report) { report_scores_ = report; }

  // Reporting scores: the mean score (player 0's view, in the evaluator's unit: points /
  // sqrt(board cells)) over the evaluated positions below the root's child `action` since the
  // root was set, or NaN where there is none (always without SetReportScores(true)).
  float RootChildScore0(int action) const {
    if (action < 0 || action >= static_cast<int>(root_score_n_.size()) ||
        root_score_n_[action] == 0) {
      return kNoScore;
    }
    return static_cast<float>(root_score_sum0_[action] / root_score_n_[action]);
  }
  // The mean score (player 0's view) over the positions this search evaluated, or NaN.
  float RootScore0() const {
    if (search_scores_ == 0) return kNoScore;
    return static_cast<float>(search_score_sum0_ / static_cast<double>(search_scores_));
  }

  // The principal variation through the root's child `action`: `action`, then from each node
  // its most visited child (ties: the lower action) while that child has visits, at most
  // `max_length` actions in all. Empty for an action that is no root child.
  std::vector<int> PrincipalVariation(int action, int max_length) const {
    std::vector<int> pv;
    int32_t child = -1;
    bool found = false;
    ForEachRootEdge([&](const Edge& e) {
      if (e.action == action) {
        found = true;
        child = e.child;
      }
    });
    if (!found || max_length < 1) return pv;
    pv.push_back(action);
    while (child >= 0 && static_cast<int>(pv.size()) < max_length) {
      const Node& node = nodes_[child];
      if (node.state != NodeState::kExpanded) break;
      const Edge* best = nullptr;
      for (int i = 0; i < node.num_edges; ++i) {
        const Edge& e = edges_[node.first_edge + i];
        if (e.n > 0 && (best == nullptr || e.n > best->n)) best = &e;
      }
      if (best == nullptr) break;
      pv.push_back(best->action);
      child = best->child;
    }
    return pv;
  }
  // The score center (player 0's view) of the current search's utility; NaN before the first
  // score (or with score utility off).
  float score_center0() const { return score_center0_; }

 private:
  using Node = internal::Node;
  using Edge = internal::Edge;
  using NodeState = internal::NodeState;
  static constexpr int32_t kRoot = 0;
  static constexpr int32_t kMaxPending = std::numeric_limits<int16_t>::max();
  static constexpr float kNoScore = std::numeric_limits<float>::quiet_NaN();

  Mcts(const G& root, const MctsOptions& options)
      : options_(options),
        root_game_(root),
        num_actions_(root.NumActions()),
        budget_(options.num_simulations),
        add_noise_(options.add_noise),
        noise_rng_(options.seed),
        inv_score_cells_(1.0f / std::sqrt(static_cast<float>(root.Shape().height) *
                                          static_cast<float>(root.Shape().width))) {
    legal_.reserve(num_actions_);
    path_.reserve(root.MaxGameLength() + 1);
    ResetTree();
  }

  void Reserve() {
    const size_t nodes = static_cast<size_t>(budget_) + 1;
    // Edges: one per legal action of each expanded node; the branching factor rarely reaches
    // NumActions() in large games, so cap the up-front reservation and let the vector grow.
    const size_t edges = nodes * static_cast<size_t>(std::min(num_actions_, 64));
    // Growing at least geometrically: a budget raised a little at a time (an analysis adds 16
    // simulations per step) must not copy the whole tree at every step.
    const auto grow = [](auto& v, size_t n) {
      if (n > v.capacity()) v.reserve(std::max(n, 2 * v.capacity()));
    };
    grow(nodes_, nodes);
    grow(edges_, edges);
    grow(spare_nodes_, nodes);
    grow(spare_edges_, edges);
  }

  void ResetTree() {
    Reserve();
    nodes_.clear();
    edges_.clear();
    Node root;
    if (root_game_.IsTerminal()) {
      root.state = NodeState::kTerminal;
      root.terminal_value0 = root_game_.Returns()[0];
    } else {
      root.to_play = static_cast<int8_t>(root_game_.ToPlay());
    }
    nodes_.push_back(root);
    root_noised_ = false;
    gumbel_ready_ = false;
    search_score_sum0_ = 0.0;
    search_scores_ = 0;
    root_score_sum0_.clear();
    root_score_n_.clear();
  }

  int32_t NewNode(int32_t parent, int32_t parent_edge) {
    Node node;
    node.parent = parent;
    node.parent_edge = parent_edge;
    nodes_.push_back(node);
    return static_cast<int32_t>(nodes_.size()) - 1;
  }

  // The PUCT choice at an expanded node (forced playouts first at the root, when on); returns
  // an edge index.
  int32_t SelectEdge(const Node& node, bool at_root) const {
    const float vl = static_cast<float>(options_.virtual_loss);
    const float parent_visits =
        static_cast<float>(node.n - 1) + vl * static_cast<float>(node.in_flight);
    const float cu = ExplorationFactor(parent_visits);
    const float fpu = (node.w + node.u) / static_cast<float>(node.n) - options_.fpu_reduction;
    // k * N(root): a child is forced while visits^2 < k * N * P.
    const float forced_kn =
        at_root && ForcesPlayouts() ? options_.forced_playout_k * parent_visits : 0.0f;
    const Edge* edges = &edges_[node.first_edge];
    const int k = node.num_edges;
    int best = 0;
    float best_score = -std::numeric_limits<float>::infinity();
    bool best_forced = false;
    for (int i = 0; i < k; ++i) {
      const Edge& e = edges[i];
      const float virtual_visits = vl * static_cast<float>(e.in_flight);
      const float visits = static_cast<float>(e.n) + virtual_visits;
      const float q = visits > 0.0f ? (e.w + e.u - virtual_visits) / visits : fpu;
      const float score = q + cu * e.prior / (1.0f + visits);
      const bool forced = visits * visits < forced_kn * e.prior;
      if (forced > best_forced || (forced == best_forced && score > best_score)) {
        best_score = score;
        best = i;
        best_forced = forced;
      }
    }
    return node.first_edge + best;
  }

  // c(s) * sqrt(max(1, N(s))) for a node whose children have `parent_visits` visits.
  float ExplorationFactor(float parent_visits) const {
    float c = options_.c_puct;
    if (options_.c_puct_base > 0.0f) {
      c += std::log((parent_visits + options_.c_puct_base + 1.0f) / options_.c_puct_base);
    }
    return c * std::sqrt(std::max(parent_visits, 1.0f));
  }

  bool ForcesPlayouts() const { return add_noise_ && options_.forced_playout_k > 0.0f; }

  bool Gumbel() const { return options_.gumbel_considered_actions > 0; }

  static float Logit(float prior) { return std::log(std::max(prior, 1e-30f)); }

  // Sets up this search's sequential halving at an expanded root: draws the root's Gumbel
  // values once per root when the search has noise, records each root edge's visits and the
  // root's, and lays out the schedule (see the top of this file).
  void PrepareGumbelSearch() {
    const Node& root = nodes_[kRoot];
    const int k = root.num_edges;
    const Edge* edges = &edges_[root.first_edge];
    if (add_noise_ && !root_noised_) {
      root_noised_ = true;
      // -log(E) with E ~ Exp(1) is Gumbel(0, 1).
      std::exponential_distribution<float> exponential(1.0f);
      gumbel_.resize(k);
      for (int i = 0; i < k; ++i) {
        gumbel_[i] = -std::log(std::max(exponential(noise_rng_), 1e-30f));
      }
    }
    gumbel_base_.resize(k);
    gumbel_logit_.resize(k);
    for (int i = 0; i < k; ++i) {
      gumbel_base_[i] = edges[i].n;
      gumbel_logit_[i] = Logit(edges[i].prior);
    }
    gumbel_base_root_n_ = root.n;
    ConsideredVisitSchedule(std::min(options_.gumbel_considered_actions, k),
                            std::max(budget_ - root.n, 0), &considered_visits_, &gumbel_halvings_);
    gumbel_ready_ = true;
  }

  // mctx's sequential halving schedule: for each of n simulations, the visits (in this search)
  // that the child it goes to must have, for m considered actions; and, ascending, the
  // simulations that begin a phase with fewer actions than the phase before (a halving).
  static void ConsideredVisitSchedule(int m, int n, std::vector<int>* out,
                                      std::vector<int>* halvings) {
    out->clear();
    out->reserve(n);
    halvings->clear();
    if (m <= 1) {
      for (int i = 0; i < n; ++i) out->push_back(i);
      return;
    }
    int log2m = 0;
    while ((1 << log2m) < m) ++log2m;
    int level = 0;  // the visits each of the `considered` best actions has had so far
    int considered = m;
    while (static_cast<int>(out->size()) < n) {
      const int extra = std::max(1, n / (log2m * considered));
      for (int r = 0; r < extra; ++r, ++level) out->insert(out->end(), considered, level);
      const int next = std::max(2, considered / 2);
      if (next < considered && static_cast<int>(out->size()) < n) {
        halvings->push_back(static_cast<int>(out->size()));
      }
      considered = next;
    }
    out->resize(n);
  }

  // This search's index of the next simulation (visits of this search, in flight included).
  int64_t GumbelSimulationIndex() const {
    const Node& root = nodes_[kRoot];
    return static_cast<int64_t>(root.n) - gumbel_base_root_n_ + root.in_flight;
  }

  // Whether the next simulation begins a halving (see ConsideredVisitSchedule).
  bool AtGumbelHalving() const {
    return std::binary_search(gumbel_halvings_.begin(), gumbel_halvings_.end(),
                              GumbelSimulationIndex());
  }

  // The root edge for the next simulation of sequential halving (see the top of this file).
  int32_t SelectGumbelRootEdge() {
    const Node& root = nodes_[kRoot];
    const int k = root.num_edges;
    const Edge* edges = &edges_[root.first_edge];
    const int64_t index = GumbelSimulationIndex();
    if (index < 0 || index >= static_cast<int64_t>(considered_visits_.size())) {
      ++stats_.gumbel_puct_fallbacks;  // not reached: collection stops at the budget
      return SelectEdge(root, /*at_root=*/true);
    }
    const int level = considered_visits_[index];
    gumbel_sigma_.resize(k);
    GumbelSigma(gumbel_sigma_);
    int best = -1;
    float best_score = 0.0f;
    for (int i = 0; i < k; ++i) {
      if (edges[i].n - gumbel_base_[i] + edges[i].in_flight != level) continue;
      const float score = RootGumbel(i) + gumbel_logit_[i] + gumbel_sigma_[i];
      if (best < 0 || score > best_score) {
        best = i;
        best_score = score;
      }
    }
    // Every simulation of the schedule finds a child at its level; PUCT is only a safeguard.
    if (best < 0) {
      ++stats_.gumbel_puct_fallbacks;
      return SelectEdge(root, /*at_root=*/true);
    }
    return root.first_edge + best;
  }

  // The root's Gumbel draw for edge i; 0 when none was drawn for this root.
  float RootGumbel(int i) const { return root_noised_ ? gumbel_[i] : 0.0f; }

  // sigma(q^(a)) of each root edge, in edge order (see the top of this file).
  void GumbelSigma(std::span<float> out) const {
    const Node& root = nodes_[kRoot];
    const Edge* edges = &edges_[root.first_edge];
    const int k = root.num_edges;
    const float root_value = root.n > 0 ? (root.w + root.u) / static_cast<float>(root.n) : 0.0f;
    float lo = std::numeric_limits<float>::infinity();
    float hi = -lo;
    int max_n = 0;
    for (int i = 0; i < k; ++i) {
      const Edge& e = edges[i];
      const float q = e.n > 0 ? (e.w + e.u) / static_cast<float>(e.n) : root_value;
      out[i] = q;
      lo = std::min(lo, q);
      hi = std::max(hi, q);
      max_n = std::max(max_n, e.n);
    }
    // A spread below kMinSpread is float rounding of equal values (e.g. the same evaluation
    // reached by two paths), not a difference worth a full-strength sigma: no spread at all.
    constexpr float kMinSpread = 1e-5f;
    const float spread = hi - lo;
    const float scale = spread < kMinSpread
                            ? 0.0f
                            : (options_.gumbel_c_visit + static_cast<float>(max_n)) *
                                  options_.gumbel_c_scale / spread;
    for (int i = 0; i < k; ++i) out[i] = (out[i] - lo) * scale;
  }

  // softmax(logit + sigma) over the root's children, written to out[action] (zeroed by the
  // caller). The root must be expanded.
  void ImprovedPolicy(std::span<float> out) const {
    const Node& root = nodes_[kRoot];
    const Edge* edges = &edges_[root.first_edge];
    const int k = root.num_edges;
    std::vector<float> z(k);
    GumbelSigma(z);
    float top = -std::numeric_limits<float>::infinity();
    for (int i = 0; i < k; ++i) top = std::max(top, z[i] += Logit(edges[i].prior));
    double sum = 0.0;
    for (int i = 0; i < k; ++i) sum += z[i] = std::exp(z[i] - top);
    const float inv = static_cast<float>(1.0 / sum);
    for (int i = 0; i < k; ++i) out[edges[i].action] = z[i] * inv;
  }

  // SelectAction with Gumbel root search (see the top of this file).
  template <typename Rng>
  int GumbelWinner(float temperature, Rng& rng) const {
    const Node& root = nodes_[kRoot];
    const Edge* edges = &edges_[root.first_edge];
    const int k = root.num_edges;
    std::vector<float> sigma(k);
    GumbelSigma(sigma);
    // Visits of this search; none when it ran no simulation of its own (kept visits met the
    // budget, whether or not it set up).
    const bool own_search = gumbel_ready_ && !considered_visits_.empty();
    auto own_visits = [&](int i) { return own_search ? edges[i].n - gumbel_base_[i] : 0; };
    int top = 0;
    for (int i = 0; i < k; ++i) top = std::max(top, own_visits(i));
    // Without a search of its own the move is a sample of the improved policy whenever the
    // caller wants randomness: the root's draws if it has them, else fresh ones.
    const bool fresh_draws = !own_search && !root_noised_ && (add_noise_ || temperature > 0.0f);
    std::exponential_distribution<float> exponential(1.0f);
    int best = -1;
    float best_score = 0.0f;
    for (int i = 0; i < k; ++i) {
      if (own_visits(i) != top) continue;
      const float g = fresh_draws ? -std::log(std::max(exponential(rng), 1e-30f)) : RootGumbel(i);
      const float score = g + Logit(edges[i].prior) + sigma[i];
      if (best < 0 || score > best_score) {
        best = i;
        best_score = score;
      }
    }
    return edges[best].action;
  }

  // Q - z * sqrt(var / N) of a visited edge (see the LCB above).
  float LowerConfidenceBound(const Edge& e) const { return LowerBound(e, options_.lcb_stdevs); }
  float LowerBound(const Edge& e, float stdevs) const {
    constexpr float kPriorVisits = 1.0f, kPriorVariance = 0.25f;
    const float n = static_cast<float>(e.n);
    const float mean = (e.w + e.u) / n;
    const float squares = std::max(0.0f, e.w2 - n * mean * mean);
    const float variance = (squares + kPriorVisits * kPriorVariance) / (n + kPriorVisits);
    return mean - stdevs * std::sqrt(variance / n);
  }

  // The most visited root edge; ties go to the higher prior, then the lower action. The root
  // must be expanded.
  const Edge& MostVisitedRootEdge() const {
    const Edge* best = nullptr;
    ForEachRootEdge([&](const Edge& e) {
      if (best == nullptr || e.n > best->n || (e.n == best->n && e.prior > best->prior)) best = &e;
    });
    return *best;
  }

  // Policy target pruning (see the algorithm above): writes each root child's pruned visit
  // count to out[action] (size NumActions()); `total` = the root children's visits, > 0. The most
  // visited child keeps all of its visits, so the sum is positive.
  void PrunedVisits(int64_t total, std::span<float> out) const {
    const float n_root = static_cast<float>(total);
    const float cu = ExplorationFactor(n_root);
    const Edge* best = &MostVisitedRootEdge();
    const float best_score = (best->w + best->u) / static_cast<float>(best->n) +
                             cu * best->prior / (1.0f + static_cast<float>(best->n));
    ForEachRootEdge([&](const Edge& e) {
      float kept = static_cast<float>(e.n);
      if (&e != best && e.n > 0) {
        const float q = (e.w + e.u) / static_cast<float>(e.n);
        const float forced = std::sqrt(options_.forced_playout_k * e.prior * n_root);
        if (q < best_score) {
          // The fewest visits n with q + cu P / (1 + n) < best_score, but no fewer than the
          // visits less the forced ones.
          const float needed = std::floor(cu * e.prior / (best_score - q));
          kept = std::clamp(needed, std::ceil(kept - forced), kept);
        }
        if (kept < static_cast<float>(e.n) && kept <= 1.0f) kept = 0.0f;
      }
      out[e.action] = kept;
    });
  }

  void AddVirtualLoss(int32_t leaf) {
    for (int32_t x = leaf; x >= 0; x = nodes_[x].parent) {
      Node& nd = nodes_[x];
      ++nd.in_flight;
      if (nd.parent_edge >= 0) ++edges_[nd.parent_edge].in_flight;
    }
  }

  // Reporting scores: counts `score0` for the root child above `node` (none for the root).
  void AddRootChildScore(int32_t node, float score0) {
    if (root_score_n_.empty()) {
      root_score_sum0_.assign(num_actions_, 0.0);
      root_score_n_.assign(num_actions_, 0);
    }
    if (node == kRoot) return;
    while (nodes_[node].parent != kRoot) node = nodes_[node].parent;
    const int action = edges_[nodes_[node].parent_edge].action;
    root_score_sum0_[action] += score0;
    ++root_score_n_[action];
  }

  // Adds one visit with value v0 and score utility u0 (both for player 0) to `leaf` and every
  // node and edge above it.
  void Backup(int32_t leaf, float v0, float u0, bool remove_virtual_loss) {
    const int in_flight_delta = remove_virtual_loss ? 1 : 0;
    Node* nd = &nodes_[leaf];
    nd->n += 1;
    nd->in_flight -= in_flight_delta;
    if (nd->state != NodeState::kTerminal) {
      nd->w += nd->to_play == 0 ? v0 : -v0;
      nd->u += nd->to_play == 0 ? u0 : -u0;
    }
    while (nd->parent >= 0) {
      Edge& e = edges_[nd->parent_edge];
      Node& p = nodes_[nd->parent];
      const float v = p.to_play == 0 ? v0 : -v0;
      const float u = p.to_play == 0 ? u0 : -u0;
      e.n += 1;
      e.w += v;
      e.u += u;
      e.w2 += (v + u) * (v + u);
      e.in_flight = static_cast<int16_t>(e.in_flight - in_flight_delta);
      p.n += 1;
      p.w += v;
      p.u += u;
      p.in_flight -= in_flight_delta;
      nd = &p;
    }
  }

  // Player 0's score utility for a score `score0` of player 0 (in points / sqrt(cells)); 0 with
  // score utility off, a NaN score or no center yet.
  float Utility0(float score0) const {
    if (!WantsScores() || !std::isfinite(score0) || std::isnan(score_center0_)) return 0.0f;
    constexpr float kTwoOverPi = 0.63661977f;
    return options_.score_utility * kTwoOverPi *
           std::atan((score0 - score_center0_) / options_.score_utility_scale);
  }

  // A terminal position's final score for player 0 in the score's unit, or NaN for a game
  // without one.
  float FinalScore0(const G& terminal) const {
    if constexpr (games::GameWithFinalOwnership<G>) {
      return static_cast<float>(terminal.FinalScore()) * inv_score_cells_;
    } else {
      return kNoScore;
    }
  }

  void AddRootNoise() {
    root_noised_ = true;
    const Node& root = nodes_[kRoot];
    Edge* edges = &edges_[root.first_edge];
    const int k = root.num_edges;
    std::gamma_distribution<float> gamma(options_.dirichlet_alpha, 1.0f);
    noise_.resize(k);
    float sum = 0.0f;
    for (int i = 0; i < k; ++i) sum += noise_[i] = gamma(noise_rng_);
    const float eps = options_.dirichlet_epsilon;
    for (int i = 0; i < k; ++i) {
      // All draws can underflow to 0 for tiny alpha; fall back to uniform noise.
      const float eta = sum > 0.0f ? noise_[i] / sum : 1.0f / static_cast<float>(k);
      edges[i].prior = (1.0f - eps) * edges[i].prior + eps * eta;
    }
  }

  // Copies the subtree under `new_root` into the spare arenas (breadth first) and swaps them in.
  void CompactSubtree(int32_t new_root) {
    spare_nodes_.clear();
    spare_edges_.clear();
    spare_nodes_.push_back(nodes_[new_root]);
    spare_nodes_[0].parent = -1;
    spare_nodes_[0].parent_edge = -1;
    for (size_t i = 0; i < spare_nodes_.size(); ++i) {
      if (spare_nodes_[i].state != NodeState::kExpanded) continue;
      const int32_t old_first = spare_nodes_[i].first_edge;
      const int k = spare_nodes_[i].num_edges;
      const int32_t new_first = static_cast<int32_t>(spare_edges_.size());
      spare_nodes_[i].first_edge = new_first;
      for (int j = 0; j < k; ++j) {
        Edge e = edges_[old_first + j];
        if (e.child >= 0) {
          Node c = nodes_[e.child];  // its first_edge still indexes the old arena
          c.parent = static_cast<int32_t>(i);
          c.parent_edge = new_first + j;
          spare_nodes_.push_back(c);
          e.child = static_cast<int32_t>(spare_nodes_.size()) - 1;
        }
        spare_edges_.push_back(e);
      }
    }
    nodes_.swap(spare_nodes_);
    edges_.swap(spare_edges_);
  }

  template <typename F>
  void ForEachRootEdge(F&& f) const {
    const Node& root = nodes_[kRoot];
    if (root.state != NodeState::kExpanded) return;
    for (int i = 0; i < root.num_edges; ++i) f(edges_[root.first_edge + i]);
  }

  const MctsOptions options_;
  G root_game_;
  const int num_actions_;
  int budget_;
  bool add_noise_;
  bool root_noised_ = false;
  std::mt19937_64 noise_rng_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<Node> spare_nodes_;  // the other half of the double-buffered arenas
  std::vector<Edge> spare_edges_;
  std::vector<int> path_;
  std::vector<int> legal_;
  std::vector<float> noise_;
  // Gumbel root search (see the top of this file): the root's draws (edge order; valid while
  // root_noised_); whether this search has set up, with each root edge's visits and the root's
  // when it did, the logits, the schedule's level of each simulation, and a scratch for sigma.
  std::vector<float> gumbel_;
  bool gumbel_ready_ = false;
  int32_t gumbel_base_root_n_ = 0;
  std::vector<int32_t> gumbel_base_;
  std::vector<float> gumbel_logit_;
  std::vector<int> considered_visits_;
  std::vector<int> gumbel_halvings_;
  std::vector<float> gumbel_sigma_;
  MctsStats stats_;
  internal::BatchScratch<G> scratch_;
  // Score utility: 1 / sqrt(board cells); the center (player 0's view; NaN until known); the
  // sum and count of the scores (player 0's view) this search has backed up since the last
  // root change.
  const float inv_score_cells_;
  float score_center0_ = kNoScore;
  double search_score_sum0_ = 0.0;
  int64_t search_scores_ = 0;
  // Reporting scores: per root action, the sum and count of scores below it (sized on first
  // use).
  bool report_scores_ = false;
  std::vector<double> root_score_sum0_;
  std::vector<int32_t> root_score_n_;
};

// Runs every search in `searches` to Done(), putting the leaves of all of them (up to
// leaves_per_search each) into one Evaluate call per round: many games per request. Blocks for
// as long as the evaluator does.
// Returns: OK; InvalidArgument if leaves_per_search < 1; FailedPrecondition if a search has
// leaves pending; the evaluator's error (that round's leaves are cancelled).
template <games::Game G>
absl::Status RunBatched(std::type_identity_t<std::span<Mcts<G>* const>> searches,
                        Evaluator<G>& evaluator, int leaves_per_search) {
  internal::BatchScratch<G> scratch;
  return internal::RunRounds<G>(
      searches, evaluator, leaves_per_search, [](const Mcts<G>& m) { return m.Done(); }, scratch);
}

}  // namespace zf::search
