#include "actor/actor.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "actor/record_proto.h"
#include "common/logging.h"
#include "common/metrics/buckets.h"
#include "common/status_macros.h"
#include "games/registry.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"

namespace zf::actor {

struct Actor::Metrics {
  prometheus::Counter* games;
  prometheus::Counter* moves;
  prometheus::Counter* simulations;
  prometheus::Counter* leaf_evaluations;
  prometheus::Counter* wait_seconds;
  prometheus::Gauge* requests_in_flight;
  prometheus::Gauge* model_version;
  prometheus::Counter* resignations;
  prometheus::Histogram* game_length;
  prometheus::Gauge* resignation_enabled;
  prometheus::Gauge* resign_false_positive_ratio;
  prometheus::Counter* reanalysis_games;
  prometheus::Counter* reanalysis_leaf_evaluations;
};

class Actor::WorkerBase {
 public:
  virtual ~WorkerBase() = default;
  // The worker's loop; returns when its games are done, on Stop, or on an error.
  virtual absl::Status Run() = 0;
  // Wakes the worker if it is waiting for answers (Stop).
  virtual void Wake() = 0;
};

namespace {

// Answers delivered to one worker. Shared with the evaluator's callbacks, so an answer that
// arrives after the worker has exited lands here harmlessly.
struct Mailbox {
  absl::Mutex mu;
  std::deque<std::pair<int, absl::StatusOr<AsyncEvaluator::Result>>> answers ABSL_GUARDED_BY(mu);
  bool woken ABSL_GUARDED_BY(mu) = false;
};

bool ValidId(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) {
      return false;
    }
  }
  return true;
}

uint64_t RandomSeed() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device() ^
         static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
}

}  // namespace

// One worker thread's games, for game type G.
template <typename G>
class ActorWorker final : public Actor::WorkerBase {
 public:
  ActorWorker(Actor* actor, int index, G start)
      : actor_(actor),
        index_(index),
        start_(std::move(start)),
        mailbox_(std::make_shared<Mailbox>()),
        symmetries_(start_.Symmetries()),
        plane_size_(start_.Shape().Size()),
        num_actions_(start_.NumActions()),
        rng_(search::internal::MixSeed(actor->seed_ ^
                                       (0xEA7A'0000ULL + static_cast<uint64_t>(index)))) {}

  void Wake() override {
    absl::MutexLock lock(&mailbox_->mu);
    mailbox_->woken = true;
  }

  absl::Status Run() override {
    const ActorOptions& options = actor_->options_;
    slots_.resize(options.games_per_worker);
    const int num_groups = std::min(options.requests_in_flight, options.games_per_worker);
    groups_.resize(num_groups);
    for (int s = 0; s < options.games_per_worker; ++s) {
      groups_[s % num_groups].slots.push_back(s);
      ZF_RETURN_IF_ERROR(StartGame(slots_[s]));
    }
    absl::Status status = Loop();
    // Requests still in flight belong to dropped games; their answers will be ignored.
    int64_t in_flight = 0;
    for (const Group& group : groups_) in_flight += group.in_flight ? 1 : 0;
    actor_->requests_in_flight_ -= in_flight;
    actor_->metrics_->requests_in_flight->Decrement(static_cast<double>(in_flight));
    return status;
  }

 private:
  struct Slot {
    std::unique_ptr<search::SelfPlayGame<G>> game;  // null: no game (quota reached)
    bool reanalysis = false;                        // the game replays one from played_
    std::string id;
    std::set<int64_t> versions;
    int last_moves = 0;
    int64_t last_simulations = 0;
  };
  struct Group {
    std::vector<int> slots;
    bool in_flight = false;
    std::vector<search::PendingLeaf<G>> leaves;
    std::vector<int> owners;  // slot of each leaf
  };

  bool Stopping() const { return actor_->stopping_.load(std::memory_order_relaxed); }

  absl::Status Loop() {
    while (!Stopping()) {
      bool any_in_flight = false;
      for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
        if (!groups_[g].in_flight) ZF_RETURN_IF_ERROR(Submit(g));
        any_in_flight = any_in_flight || groups_[g].in_flight;
      }
      if (!any_in_flight) {
        for (const Slot& slot : slots_) {
          if (slot.game != nullptr) {
            return absl::InternalError("a game has no leaf to evaluate and no request in flight");
          }
        }
        return absl::OkStatus();  // every game this worker could start is done
      }
      std::deque<std::pair<int, absl::StatusOr<AsyncEvaluator::Result>>> answers;
      {
        const absl::Time start = absl::Now();
        absl::MutexLock lock(&mailbox_->mu);
        Mailbox* mailbox = mailbox_.get();
        mailbox_->mu.Await(absl::Condition(
            +[](Mailbox* m)
                 ABSL_EXCLUSIVE_LOCKS_REQUIRED(m->mu) { return !m->answers.empty() || m->woken; },
            mailbox));
        answers.swap(mailbox_->answers);
        const int64_t waited = absl::ToInt64Nanoseconds(absl::Now() - start);
        actor_->wait_nanos_ += waited;
        actor_->metrics_->wait_seconds->Increment(static_cast<double>(waited) * 1e-9);
      }
      for (auto& [group, answer] : answers) {
        if (Stopping()) break;
        ZF_RETURN_IF_ERROR(Apply(group, std::move(answer)));
      }
    }
    return absl::OkStatus();
  }

  // Starts a new game in `slot` if the actor's quota allows; otherwise leaves it empty.
  absl::Status StartGame(Slot& slot) {
    slot.game.reset();
    const ActorOptions& options = actor_->options_;
    const int64_t number = actor_->games_started_.fetch_add(1);
    if (options.max_games > 0 && number >= options.max_games) return absl::OkStatus();
    search::SelfPlayOptions self_play = options.self_play;
    self_play.seed = search::internal::MixSeed(
        actor_->seed_ ^ search::internal::MixSeed(static_cast<uint64_t>(number)));
    // Until the gate has measured resignation to be safe, every game is played out (and still
    // records whether it would have resigned).
    if (!actor_->resignation_gate_.open()) self_play.resign_playthrough_fraction = 1.0f;
    slot.reanalysis = !played_.empty() &&
                      static_cast<double>(reanalysis_evaluations_) <
                          options.reanalysis_share *
                              static_cast<double>(selfplay_evaluations_ + reanalysis_evaluations_);
    if (slot.reanalysis) {
      const size_t pick = std::uniform_int_distribution<size_t>(0, played_.size() - 1)(rng_);
      ZF_ASSIGN_OR_RETURN(
          slot.game, search::SelfPlayGame<G>::CreateReanalysis(start_, self_play, played_[pick]));
    } else {
      ZF_ASSIGN_OR_RETURN(slot.game, search::SelfPlayGame<G>::Create(start_, self_play));
    }
    slot.id = absl::StrCat(actor_->actor_id_, "/", index_, "/", games_begun_++);
    slot.versions.clear();
    slot.last_moves = 0;
    slot.last_simulations = 0;
    return absl::OkStatus();
  }

  // Counts the slot's progress into the metrics; emits and replaces a finished game.
  absl::Status Progress(Slot& slot) {
    while (slot.game != nullptr) {
      const search::MctsStats& stats = slot.game->search().stats();
      const int64_t simulations = stats.evaluations + stats.terminal_backups;
      const int moves = slot.game->num_moves();
      if (moves > slot.last_moves) {
        actor_->moves_ += moves - slot.last_moves;
        actor_->metrics_->moves->Increment(moves - slot.last_moves);
        slot.last_moves = moves;
      }
      if (simulations > slot.last_simulations) {
        actor_->simulations_ += simulations - slot.last_simulations;
        actor_->metrics_->simulations->Increment(
            static_cast<double>(simulations - slot.last_simulations));
        slot.last_simulations = simulations;
      }
      if (!slot.game->Finished()) return absl::OkStatus();
      ZF_RETURN_IF_ERROR(Emit(slot));
      ZF_RETURN_IF_ERROR(StartGame(slot));
    }
    return absl::OkStatus();
  }

  absl::Status Emit(Slot& slot) {
    search::GameRecord record = slot.game->TakeRecord();
    const ActorOptions& options = actor_->options_;
    if (options.reanalysis_share > 0 && !record.reanalysis && record.num_moves > 0) {
      played_.push_back(search::PlayedGame::Of(record));
      if (static_cast<int>(played_.size()) > options.reanalysis_window) played_.pop_front();
    }
    std::vector<int64_t> versions(slot.versions.begin(), slot.versions.end());
    absl::StatusOr<zerofleet::v1::GameRecord> proto =
        ToProto(record, slot.id, versions, symmetries_);
    if (!proto.ok()) {
      ZF_LOG(WARNING) << "actor: dropping game " << slot.id << ": " << proto.status();
      ++actor_->dropped_;
      return absl::OkStatus();
    }
    // A network sink may be full for a while: retry in short slices so Stop stays prompt.
    absl::Status put;
    do {
      put = actor_->sink_->Put(*proto, absl::Now() + absl::Seconds(1));
    } while (put.code() == absl::StatusCode::kDeadlineExceeded && !Stopping());
    if (!put.ok()) {
      ++actor_->dropped_;
      if (Stopping()) return absl::OkStatus();
      return absl::Status(put.code(), absl::StrCat("game sink: ", put.message()));
    }
    if (record.reanalysis) {
      ++actor_->reanalysis_games_;
      actor_->metrics_->reanalysis_games->Increment();
      return absl::OkStatus();
    }
    ++actor_->games_;
    actor_->metrics_->games->Increment();
    actor_->metrics_->game_length->Observe(record.num_moves);
    if (record.resigned) {
      ++actor_->resignations_;
      actor_->metrics_->resignations->Increment();
    }
    if (record.resignation_disabled && record.would_have_resigned) {
      const ResignationGate::Stats gate =
          actor_->resignation_gate_.Record(record.resign_false_positive);
      actor_->metrics_->resignation_enabled->Set(gate.open ? 1 : 0);
      actor_->metrics_->resign_false_positive_ratio->Set(static_cast<double>(gate.false_positives) /
                                                         static_cast<double>(gate.samples));
    }
    return absl::OkStatus();
  }

  absl::Status Submit(int g) {
    Group& group = groups_[g];
    group.leaves.clear();
    group.owners.clear();
    const int per_game = actor_->options_.leaves_per_game;
    for (int s : group.slots) {
      Slot& slot = slots_[s];
      while (slot.game != nullptr) {
        const size_t before = group.leaves.size();
        slot.game->CollectLeaves(per_game, &group.leaves);
        for (size_t i = before; i < group.leaves.size(); ++i) group.owners.push_back(s);
        // Collection can finish a game (terminal shortcuts): emit it and start the next one.
        const bool finished = slot.game->Finished();
        ZF_RETURN_IF_ERROR(Progress(slot));
        if (!finished || group.leaves.size() > before) break;
      }
    }
    const int rows = static_cast<int>(group.leaves.size());
    if (rows == 0) return absl::OkStatus();
    planes_.resize(static_cast<size_t>(rows) * plane_size_);
    for (int i = 0; i < rows; ++i) {
      group.leaves[i].position.Encode(planes_.data() + static_cast<size_t>(i) * plane_size_);
    }
    group.in_flight = true;
    ++actor_->requests_in_flight_;
    ++actor_->requests_;
    actor_->metrics_->requests_in_flight->Increment();
    std::shared_ptr<Mailbox> mailbox = mailbox_;
    absl::Status submitted = actor_->evaluator_->Submit(
        planes_, rows, [mailbox, g](absl::StatusOr<AsyncEvaluator::Result> answer) {
          absl::MutexLock lock(&mailbox->mu);
          mailbox->answers.emplace_back(g, std::move(answer));
        });
    if (!submitted.ok()) {
      group.in_flight = false;
      --actor_->requests_in_flight_;
      actor_->metrics_->requests_in_flight->Decrement();
      for (int i = 0; i < rows; ++i) slots_[group.owners[i]].game->CancelLeaf(group.leaves[i]);
      if (Stopping()) return absl::OkStatus();
      return absl::Status(submitted.code(), absl::StrCat("evaluator: ", submitted.message()));
    }
    return absl::OkStatus();
  }

  absl::Status Apply(int g, absl::StatusOr<AsyncEvaluator::Result> answer) {
    Group& group = groups_[g];
    group.in_flight = false;
    --actor_->requests_in_flight_;
    actor_->metrics_->requests_in_flight->Decrement();
    const int rows = static_cast<int>(group.leaves.size());
    if (!answer.ok()) {
      return absl::Status(answer.status().code(),
                          absl::StrCat("evaluator: ", answer.status().message()));
    }
    if (answer->rows != rows ||
        static_cast<int64_t>(answer->policy_logits.size()) != int64_t{rows} * num_actions_ ||
        static_cast<int64_t>(answer->wdl.size()) != int64_t{rows} * 3 ||
        (!answer->score.empty() && static_cast<int64_t>(answer->score.size()) != rows)) {
      return absl::InvalidArgumentError(
          absl::StrCat("evaluator answered ", answer->rows, " rows with ",
                       answer->policy_logits.size(), " logits for ", rows, " positions of ",
                       num_actions_, " actions (does the model fit the game?)"));
    }
    int64_t seen = actor_->model_version_.load();
    while (answer->model_version > seen &&
           !actor_->model_version_.compare_exchange_weak(seen, answer->model_version)) {
    }
    actor_->metrics_->model_version->Set(
        static_cast<double>(std::max(seen, answer->model_version)));
    priors_.resize(num_actions_);
    for (int i = 0; i < rows; ++i) {
      const search::PendingLeaf<G>& leaf = group.leaves[i];
      const float* logits = answer->policy_logits.data() + static_cast<size_t>(i) * num_actions_;
      leaf.position.LegalActions(&legal_);
      float max_logit = -std::numeric_limits<float>::infinity();
      for (int a : legal_) max_logit = std::max(max_logit, logits[a]);
      std::fill(priors_.begin(), priors_.end(), 0.0f);
      float sum = 0;
      for (int a : legal_) {
        priors_[a] = std::exp(logits[a] - max_logit);
        sum += priors_[a];
      }
      const float value = answer->wdl[3 * i] - answer->wdl[3 * i + 2];
      if (!std::isfinite(sum) || !(sum > 0) || !std::isfinite(value)) {
        return absl::InternalError(absl::StrCat("evaluator: non-finite answer for row ", i));
      }
      for (int a : legal_) priors_[a] /= sum;
      Slot& slot = slots_[group.owners[i]];
      slot.versions.insert(answer->model_version);
      // A model without a score head answers no scores: the leaf's score utility is then 0.
      const float score =
          answer->score.empty() ? std::numeric_limits<float>::quiet_NaN() : answer->score[i];
      slot.game->ApplyEvaluation(leaf, priors_, std::clamp(value, -1.0f, 1.0f), score);
      ++(slot.reanalysis ? reanalysis_evaluations_ : selfplay_evaluations_);
    }
    actor_->leaf_evaluations_ += rows;
    actor_->metrics_->leaf_evaluations->Increment(rows);
    if (reanalysis_evaluations_ > reported_reanalysis_evaluations_) {
      const int64_t more = reanalysis_evaluations_ - reported_reanalysis_evaluations_;
      actor_->reanalysis_leaf_evaluations_ += more;
      actor_->metrics_->reanalysis_leaf_evaluations->Increment(static_cast<double>(more));
      reported_reanalysis_evaluations_ = reanalysis_evaluations_;
    }
    for (int s : group.slots) ZF_RETURN_IF_ERROR(Progress(slots_[s]));
    return absl::OkStatus();
  }

  Actor* const actor_;
  const int index_;
  const G start_;
  const std::shared_ptr<Mailbox> mailbox_;
  const std::vector<games::Symmetry> symmetries_;
  const int64_t plane_size_;
  const int num_actions_;
  int64_t games_begun_ = 0;
  std::vector<Slot> slots_;
  std::vector<Group> groups_;
  std::vector<uint8_t> planes_;
  std::vector<float> priors_;
  std::vector<int> legal_;
  // Reanalysis: the worker's last self-play games, the leaf evaluations each kind has had, and
  // the draw of which game to replay.
  std::deque<search::PlayedGame> played_;
  int64_t selfplay_evaluations_ = 0;
  int64_t reanalysis_evaluations_ = 0;
  int64_t reported_reanalysis_evaluations_ = 0;
  std::mt19937_64 rng_;
};

std::string RandomActorId() {
  return absl::StrFormat("a%016x", search::internal::MixSeed(RandomSeed()));
}

ActorOptions ActorOptions::ForGame(const std::string& game) {
  ActorOptions options;
  options.game = game;
  search::SelfPlayOptions& s = options.self_play;
  s.mcts.num_simulations = 160;
  s.mcts.add_noise = true;
  s.full_search_probability = 0.25f;
  s.fast_simulations = 32;
  s.resign_threshold = -0.9f;
  s.resign_consecutive = 3;
  s.resign_playthrough_fraction = 0.1f;
  options.resignation_gate = {.min_samples = 100, .window = 400, .max_false_positive_rate = 0.05};
  s.reuse_tree = true;
  s.temperature = 1.0f;
  s.final_temperature = 0.0f;
  s.temperature_moves = 10;
  // The game's own settings (games::SelfPlayHints), where it has them.
  absl::StatusOr<games::GameConfig> config = games::ParseGameName(game);
  if (config.ok()) {
    const games::SelfPlayHints hints = games::VisitGame(*config, [](const auto& start) {
      if constexpr (games::GameWithSelfPlayHints<std::decay_t<decltype(start)>>) {
        return start.SelfPlayDefaults();
      } else {
        return games::SelfPlayHints{};
      }
    });
    if (hints.dirichlet_alpha.has_value()) s.mcts.dirichlet_alpha = *hints.dirichlet_alpha;
    if (hints.temperature_moves.has_value()) s.temperature_moves = *hints.temperature_moves;
    s.restrict_pass = hints.restrict_pass;
  }
  return options;
}

absl::Status ActorOptions::Validate() const {
  absl::StatusOr<games::GameConfig> config = games::ParseGameName(game);
  if (!config.ok()) return config.status();
  auto range = [](const char* name, int64_t v, int64_t lo, int64_t hi) -> absl::Status {
    if (v >= lo && v <= hi) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("ActorOptions: ", name, " is ", v, ", expected ", lo, "..", hi));
  };
  ZF_RETURN_IF_ERROR(range("workers", workers, 1, 256));
  ZF_RETURN_IF_ERROR(range("games_per_worker", games_per_worker, 1, kMaxGamesPerWorker));
  ZF_RETURN_IF_ERROR(
      range("requests_in_flight", requests_in_flight, kMinRequestsInFlight, kMaxRequestsInFlight));
  ZF_RETURN_IF_ERROR(range("leaves_per_game", leaves_per_game, 1, 256));
  ZF_RETURN_IF_ERROR(range("max_games", max_games, 0, std::numeric_limits<int64_t>::max() / 2));
  if (!(reanalysis_share >= 0 && reanalysis_share <= kMaxReanalysisShare)) {
    return absl::InvalidArgumentError(absl::StrCat("ActorOptions: reanalysis_share is ",
                                                   reanalysis_share, ", expected 0..",
                                                   kMaxReanalysisShare));
  }
  ZF_RETURN_IF_ERROR(range("reanalysis_window", reanalysis_window, 1, 100000));
  ZF_RETURN_IF_ERROR(resignation_gate.Validate());
  if (!actor_id.empty() && !ValidId(actor_id)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ActorOptions: actor_id \"", actor_id, "\" must be 1..64 characters of [A-Za-z0-9_.-]"));
  }
  return self_play.Validate();
}

absl::StatusOr<std::shared_ptr<AsyncEvaluator>> ConnectInference(
    const std::string& target, const std::string& game, uint64_t seed,
    const grpc_util::WireSettings& wire, prometheus::Registry* metrics) {
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(game));
  const games::PlaneShape shape =
      games::VisitGame(config, [](const auto& start) { return start.Shape(); });
  inference::RemoteEvaluatorClient::Options options;
  options.target = target;
  options.input_channels = shape.channels;
  options.board_height = shape.height;
  options.board_width = shape.width;
  options.seed = seed;
  options.wire = wire;
  options.metrics = metrics;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<inference::RemoteEvaluatorClient> client,
                      inference::RemoteEvaluatorClient::Create(std::move(options)));
  return std::shared_ptr<AsyncEvaluator>(std::make_shared<RemoteAsyncEvaluator>(
      std::shared_ptr<inference::RemoteEvaluatorClient>(std::move(client))));
}

absl::StatusOr<std::unique_ptr<Actor>> Actor::Create(
    ActorOptions options, std::shared_ptr<AsyncEvaluator> evaluator, GameSink* sink,
    std::shared_ptr<prometheus::Registry> registry) {
  ZF_RETURN_IF_ERROR(options.Validate());
  if (evaluator == nullptr) return absl::InvalidArgumentError("Actor: null evaluator");
  if (sink == nullptr) return absl::InvalidArgumentError("Actor: null sink");
  if (registry == nullptr) registry = std::make_shared<prometheus::Registry>();
  return std::unique_ptr<Actor>(
      new Actor(std::move(options), std::move(evaluator), sink, std::move(registry)));
}

Actor::Actor(ActorOptions options, std::shared_ptr<AsyncEvaluator> evaluator, GameSink* sink,
             std::shared_ptr<prometheus::Registry> registry)
    : options_(std::move(options)),
      evaluator_(std::move(evaluator)),
      sink_(sink),
      registry_(std::move(registry)),
      metrics_(std::make_unique<Metrics>()),
      resignation_gate_(options_.resignation_gate) {
  seed_ = options_.seed != 0 ? options_.seed : RandomSeed();
  actor_id_ = !options_.actor_id.empty() ? options_.actor_id : RandomActorId();
  prometheus::Registry& r = *registry_;
  auto counter = [&](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
  };
  metrics_->games = counter("zf_actor_games_total", "Self-play games put into the game sink.");
  metrics_->moves = counter("zf_actor_moves_total", "Moves played in self-play.");
  metrics_->simulations = counter("zf_actor_simulations_total", "MCTS simulations completed.");
  metrics_->leaf_evaluations =
      counter("zf_actor_leaf_evaluations_total", "Leaves evaluated by the network.");
  metrics_->wait_seconds = counter("zf_actor_evaluation_wait_seconds_total",
                                   "Worker time spent blocked waiting for evaluations.");
  metrics_->resignations = counter("zf_actor_resignations_total", "Games ended by resignation.");
  metrics_->requests_in_flight = &prometheus::BuildGauge()
                                      .Name("zf_actor_requests_in_flight")
                                      .Help("Evaluation requests submitted and not yet answered.")
                                      .Register(r)
                                      .Add({});
  metrics_->model_version = &prometheus::BuildGauge()
                                 .Name("zf_actor_model_version")
                                 .Help("Newest model version seen in evaluation answers.")
                                 .Register(r)
                                 .Add({});
  metrics_->model_version->Set(-1);
  metrics_->resignation_enabled =
      &prometheus::BuildGauge()
           .Name("zf_actor_resignation_enabled")
           .Help("1 while measured false positives let self-play games resign, else 0.")
           .Register(r)
           .Add({});
  metrics_->resignation_enabled->Set(resignation_gate_.open() ? 1 : 0);
  metrics_->resign_false_positive_ratio =
      &prometheus::BuildGauge()
           .Name("zf_actor_resign_false_positive_ratio")
           .Help("Share of played-out would-be resignations the resigning player did not lose.")
           .Register(r)
           .Add({});
  metrics_->resign_false_positive_ratio->Set(std::numeric_limits<double>::quiet_NaN());
  metrics_->reanalysis_games =
      counter("zf_actor_reanalysis_games_total",
              "Reanalysis games (old moves searched again) put into the sink.");
  metrics_->reanalysis_leaf_evaluations =
      counter("zf_actor_reanalysis_leaf_evaluations_total",
              "Leaves of reanalysis games evaluated by the network (part of leaf_evaluations).");
  // The denominator of the evaluation-wait share (`zf top`): wait seconds per worker second.
  prometheus::BuildGauge()
      .Name("zf_actor_workers")
      .Help("Self-play worker threads of this actor.")
      .Register(r)
      .Add({})
      .Set(static_cast<double>(options_.workers));
  metrics_->game_length = &prometheus::BuildHistogram()
                               .Name("zf_actor_game_length_moves")
                               .Help("Length of finished self-play games, in moves.")
                               .Register(r)
                               .Add({}, metrics::ExponentialBuckets(4, 2, 8));
}

Actor::~Actor() { Stop(); }

absl::Status Actor::Start() {
  absl::MutexLock join_lock(&join_mu_);
  absl::MutexLock lock(&mu_);
  if (started_) return absl::FailedPreconditionError("Actor already started");
  started_ = true;
  const games::GameConfig config = *games::ParseGameName(options_.game);
  for (int w = 0; w < options_.workers; ++w) {
    workers_.push_back(games::VisitGame(config, [&](const auto& start) {
      using G = std::decay_t<decltype(start)>;
      return std::unique_ptr<WorkerBase>(new ActorWorker<G>(this, w, start));
    }));
  }
  workers_running_ = options_.workers;
  for (int w = 0; w < options_.workers; ++w) {
    WorkerBase* worker = workers_[w].get();
    threads_.push_back(std::make_unique<Thread>(absl::StrCat("actor-", w),
                                                [this, worker] { WorkerDone(worker->Run()); }));
  }
  return absl::OkStatus();
}

void Actor::WorkerDone(absl::Status status) {
  if (!status.ok()) {
    ZF_LOG(ERROR) << "actor: worker failed: " << status;
    stopping_ = true;
  }
  std::vector<WorkerBase*> to_wake;
  {
    absl::MutexLock lock(&mu_);
    if (!status.ok() && error_.ok()) error_ = status;
    --workers_running_;
    if (!status.ok()) {
      for (auto& w : workers_) to_wake.push_back(w.get());
    }
  }
  for (WorkerBase* w : to_wake) w->Wake();
}

absl::Status Actor::Wait(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  if (!started_) return absl::FailedPreconditionError("Actor not started");
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return workers_running_ == 0; };
  if (!mu_.AwaitWithDeadline(absl::Condition(&done), deadline)) {
    return absl::DeadlineExceededError("actor still playing");
  }
  if (!error_.ok()) return error_;
  if (stopping_) return absl::CancelledError("actor stopped");
  return absl::OkStatus();
}

void Actor::Stop() {
  stopping_ = true;
  absl::MutexLock join_lock(&join_mu_);
  {
    absl::MutexLock lock(&mu_);
    for (auto& w : workers_) w->Wake();
  }
  threads_.clear();  // joins
}

ActorStats Actor::stats() const {
  ActorStats s;
  s.games = games_;
  s.reanalysis_games = reanalysis_games_;
  s.reanalysis_leaf_evaluations = reanalysis_leaf_evaluations_;
  s.dropped_games = dropped_;
  s.moves = moves_;
  s.simulations = simulations_;
  s.leaf_evaluations = leaf_evaluations_;
  s.resignations = resignations_;
  s.requests = requests_;
  s.requests_in_flight = requests_in_flight_;
  s.evaluation_wait_seconds = static_cast<double>(wait_nanos_.load()) * 1e-9;
  s.model_version = model_version_;
  const ResignationGate::Stats gate = resignation_gate_.stats();
  s.resignation_enabled = options_.self_play.resign_threshold > -1.0f && gate.open;
  s.resign_samples = gate.samples;
  s.resign_false_positives = gate.false_positives;
  return s;
}

}  // namespace zf::actor
