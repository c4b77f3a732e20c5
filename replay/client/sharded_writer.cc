#include "replay/client/sharded_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc/status.h"
#include "common/logging.h"
#include "prometheus/counter.h"

namespace zf::replay {
namespace {

using zerofleet::v1::GameRecord;
using zerofleet::v1::InsertRequest;
using zerofleet::v1::InsertResponse;

// Stable across processes and platforms (std::hash is not): FNV-1a, then a splitmix64 finaliser.
uint64_t Hash(const std::string& bytes) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAt(int fd, int64_t offset, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::pread(fd, data, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    offset += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

absl::Status ShardedReplayWriterOptions::Validate() const {
  if (shards.empty()) return absl::InvalidArgumentError("shards: at least one address is needed");
  absl::flat_hash_set<std::string> seen;
  for (const std::string& s : shards) {
    if (s.empty() || !seen.insert(s).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("shards: empty or repeated address \"", s, "\""));
    }
  }
  if (virtual_nodes < 1 || virtual_nodes > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("virtual_nodes must be in 1..4096, got ", virtual_nodes));
  }
  if (max_unacked_games < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_unacked_games must be >= 1, got ", max_unacked_games));
  }
  if (max_games_per_request < 1 || max_games_per_request > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_games_per_request must be in 1..64, got ", max_games_per_request));
  }
  if (rpc_timeout <= absl::ZeroDuration() || initial_backoff <= absl::ZeroDuration() ||
      max_backoff < initial_backoff) {
    return absl::InvalidArgumentError(
        "rpc_timeout and initial_backoff must be > 0 and max_backoff >= initial_backoff");
  }
  return absl::OkStatus();
}

ShardedReplayWriter::ShardedReplayWriter(ShardedReplayWriterOptions options)
    : options_(std::move(options)),
      rng_(options_.seed != 0 ? options_.seed
                              : static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()))) {}

absl::StatusOr<std::unique_ptr<ShardedReplayWriter>> ShardedReplayWriter::Create(
    ShardedReplayWriterOptions options) {
  if (absl::Status valid = options.Validate(); !valid.ok()) return valid;
  std::unique_ptr<ShardedReplayWriter> writer(new ShardedReplayWriter(std::move(options)));
  const ShardedReplayWriterOptions& o = writer->options_;
  if (o.metrics != nullptr) {
    auto& acked = prometheus::BuildCounter()
                      .Name("zf_replay_writer_acked_games_total")
                      .Help("Games replay acknowledged to this actor, by outcome.")
                      .Register(*o.metrics);
    writer->acked_stored_ = &acked.Add({{"outcome", "stored"}});
    writer->acked_duplicate_ = &acked.Add({{"outcome", "duplicate"}});
    writer->retries_ =
        &prometheus::BuildCounter()
             .Name("zf_replay_writer_insert_retries_total")
             .Help("Replay Insert calls that failed and are retried after a backoff.")
             .Register(*o.metrics)
             .Add({});
    writer->rejected_ = &prometheus::BuildCounter()
                             .Name("zf_replay_writer_rejected_games_total")
                             .Help("Games replay refused as invalid (dropped).")
                             .Register(*o.metrics)
                             .Add({});
    writer->unacknowledged_ =
        &prometheus::BuildGauge()
             .Name("zf_replay_writer_unacknowledged_games")
             .Help("Games held in memory or in the spool that replay has not acknowledged yet.")
             .Register(*o.metrics)
             .Add({});
    // The bound, so that an alert can compare the backlog with it whatever the actor's size.
    prometheus::BuildGauge()
        .Name("zf_replay_writer_unacknowledged_games_limit")
        .Help(
            "Games the writer holds in memory before it spools them or blocks (its "
            "max_unacked_games).")
        .Register(*o.metrics)
        .Add({})
        .Set(static_cast<double>(o.max_unacked_games));
  }
  writer->shards_.resize(o.shards.size());
  for (size_t i = 0; i < o.shards.size(); ++i) {
    writer->shards_[i].address = o.shards[i];
    writer->shards_[i].channel = grpc_util::CreateChannel(o.shards[i], o.wire);
    writer->shards_[i].stub = zerofleet::v1::Replay::NewStub(writer->shards_[i].channel);
    for (int v = 0; v < o.virtual_nodes; ++v) {
      writer->ring_.emplace(Hash(absl::StrCat(o.shards[i], "#", v)), static_cast<int>(i));
    }
  }
  if (!o.spool_path.empty()) {
    int fd = ::open(o.spool_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      return absl::InternalError(
          absl::StrCat("cannot open spool ", o.spool_path, ": ", std::strerror(errno)));
    }
    // Count the games a previous run left (a torn last record is dropped).
    int64_t offset = 0, games = 0;
    uint32_t size = 0;
    while (ReadAt(fd, offset, reinterpret_cast<char*>(&size), sizeof(size))) {
      struct stat st;
      if (fstat(fd, &st) != 0 || offset + 4 + static_cast<int64_t>(size) > st.st_size) break;
      offset += 4 + size;
      ++games;
    }
    if (ftruncate(fd, offset) != 0) ZF_LOG(WARNING) << "spool: cannot truncate a torn tail";
    absl::MutexLock spool_lock(&writer->spool_mu_);
    writer->spool_fd_ = fd;
    absl::MutexLock lock(&writer->mu_);
    writer->spool_size_ = offset;
    writer->stats_.spool_pending = games;
    writer->PublishBacklog();
  }
  for (size_t i = 0; i < writer->shards_.size(); ++i) {
    writer->threads_.emplace_back(absl::StrCat("replay-writer-", i),
                                  [w = writer.get(), i] { w->SenderLoop(static_cast<int>(i)); });
  }
  if (!o.spool_path.empty()) {
    writer->threads_.emplace_back("replay-spool", [w = writer.get()] { w->SpoolLoop(); });
  }
  return writer;
}

ShardedReplayWriter::~ShardedReplayWriter() { Close(); }

int ShardedReplayWriter::ShardFor(const std::string& game_id) const {
  auto it = ring_.lower_bound(Hash(game_id));
  if (it == ring_.end()) it = ring_.begin();
  return it->second;
}

bool ShardedReplayWriter::Available(const Shard& s) const {
  // TRANSIENT_FAILURE: the channel lost its connection and could not reconnect yet (the process
  // is gone or refusing); known at once, before any Insert to it times out.
  return !s.down && s.channel->GetState(/*try_to_connect=*/false) != GRPC_CHANNEL_TRANSIENT_FAILURE;
}

bool ShardedReplayWriter::AllDown() const {
  for (const Shard& s : shards_) {
    if (Available(s)) return false;
  }
  return true;
}

void ShardedReplayWriter::PublishBacklog() {
  if (unacknowledged_ != nullptr) {
    unacknowledged_->Set(static_cast<double>(unacked_ + stats_.spool_pending));
  }
}

int ShardedReplayWriter::RouteNewGame(const std::string& game_id) const {
  auto start = ring_.lower_bound(Hash(game_id));
  if (start == ring_.end()) start = ring_.begin();
  const int home = start->second;
  // With a spool, a game may be resent by the next run, which would not know where it went.
  if (!options_.spool_path.empty() || Available(shards_[static_cast<size_t>(home)])) return home;
  // The next shard clockwise on the ring that is up.
  auto it = start;
  for (size_t n = 0; n < ring_.size(); ++n) {
    if (++it == ring_.end()) it = ring_.begin();
    if (Available(shards_[static_cast<size_t>(it->second)])) return it->second;
  }
  return home;
}

absl::Status ShardedReplayWriter::Write(GameRecord game, absl::Time deadline) {
  if (game.game_id().empty()) return absl::InvalidArgumentError("a game needs a game_id");
  const bool has_spool = !options_.spool_path.empty();
  {
    absl::MutexLock lock(&mu_);
    auto ready = [this, has_spool]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return closed_ || unacked_ < options_.max_unacked_games || (has_spool && AllDown());
    };
    if (!mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
      return absl::DeadlineExceededError("replay writer: every unacknowledged slot is taken");
    }
    if (closed_) return absl::CancelledError("replay writer closed");
    if (unacked_ < options_.max_unacked_games) {
      ++unacked_;
      ++stats_.written;
      // A new game has never been sent anywhere, so it may go to any shard; once queued it is
      // retried only there (its retries deduplicate on that shard).
      const int shard = RouteNewGame(game.game_id());
      if (shard != ShardFor(game.game_id())) ++stats_.rerouted;
      shards_[static_cast<size_t>(shard)].queue.push_back(std::move(game));
      PublishBacklog();
      return absl::OkStatus();
    }
  }
  // Memory is full and every shard is down: spill.
  return Spool(game, /*new_game=*/true);
}

absl::Status ShardedReplayWriter::Spool(const GameRecord& game, bool new_game) {
  std::string payload = game.SerializeAsString();
  uint32_t size = static_cast<uint32_t>(payload.size());
  absl::MutexLock spool_lock(&spool_mu_);
  if (spool_fd_ < 0) return absl::CancelledError("replay writer closed");
  int64_t end = 0;
  {
    absl::MutexLock lock(&mu_);
    end = spool_size_;
  }
  // Appends go at spool_size_ (the reader may have truncated the file to 0 since).
  if (::lseek(spool_fd_, end, SEEK_SET) < 0 ||
      !WriteAll(spool_fd_, reinterpret_cast<const char*>(&size), sizeof(size)) ||
      !WriteAll(spool_fd_, payload.data(), payload.size())) {
    return absl::InternalError(absl::StrCat("cannot write the spool: ", std::strerror(errno)));
  }
  absl::MutexLock lock(&mu_);
  spool_size_ = end + 4 + static_cast<int64_t>(size);
  if (new_game) ++stats_.written;
  ++stats_.spooled;
  ++stats_.spool_pending;
  PublishBacklog();
  return absl::OkStatus();
}

void ShardedReplayWriter::SpoolLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return closed_ || (spool_read_offset_ < spool_size_ && !AllDown() &&
                           unacked_ < options_.max_unacked_games);
      };
      mu_.Await(absl::Condition(&work));
      if (closed_) return;
    }
    GameRecord game;
    bool parsed = false;
    {
      absl::MutexLock spool_lock(&spool_mu_);
      int64_t offset = 0;
      {
        absl::MutexLock lock(&mu_);
        offset = spool_read_offset_;
      }
      uint32_t size = 0;
      std::string payload;
      if (ReadAt(spool_fd_, offset, reinterpret_cast<char*>(&size), sizeof(size))) {
        payload.resize(size);
        parsed =
            ReadAt(spool_fd_, offset + 4, payload.data(), size) && game.ParseFromString(payload);
      }
      absl::MutexLock lock(&mu_);
      spool_read_offset_ = parsed ? offset + 4 + size : spool_size_;
      if (!parsed)
        ZF_LOG(ERROR) << "spool: unreadable record at " << offset << "; dropping the rest";
      --stats_.spool_pending;
      if (!parsed) stats_.spool_pending = 0;
      if (spool_read_offset_ >= spool_size_) {
        // Drained: start the file over.
        if (ftruncate(spool_fd_, 0) != 0) ZF_LOG(WARNING) << "spool: cannot truncate";
        spool_read_offset_ = 0;
        spool_size_ = 0;
      }
      if (parsed) {
        ++unacked_;
        // A spooled game may have been sent to its home shard before (Close spills what was in
        // flight), so it goes home: its retry must deduplicate there.
        shards_[static_cast<size_t>(ShardFor(game.game_id()))].queue.push_back(std::move(game));
      }
      PublishBacklog();
    }
  }
}

void ShardedReplayWriter::SenderLoop(int shard) {
  Shard& s = shards_[static_cast<size_t>(shard)];
  while (true) {
    std::vector<GameRecord> games;
    {
      absl::MutexLock lock(&mu_);
      auto work = [this, &s]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !s.queue.empty(); };
      mu_.Await(absl::Condition(&work));
      if (closed_) return;
      while (!s.queue.empty() && static_cast<int>(games.size()) < options_.max_games_per_request) {
        games.push_back(std::move(s.queue.front()));
        s.queue.pop_front();
      }
    }
    if (!Deliver(shard, games)) return;
  }
}

bool ShardedReplayWriter::Deliver(int shard, std::vector<GameRecord>& games) {
  Shard& s = shards_[static_cast<size_t>(shard)];
  int failures = 0;
  while (true) {
    InsertRequest request;
    for (const GameRecord& g : games) *request.add_games() = g;
    InsertResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + options_.rpc_timeout));
    // A shard that is away (restarting, unreachable) is waited for until the deadline, so the
    // insert goes out as soon as the channel reconnects instead of after this loop's backoff.
    context.set_wait_for_ready(true);
    grpc::Status status = s.stub->Insert(&context, request, &response);
    if (status.ok()) {
      // The acknowledgement is reported before the games count as acked, so a Flush() that
      // returns has every id reported.
      if (options_.on_acked) {
        std::vector<std::string> ids;
        ids.reserve(games.size());
        for (const GameRecord& g : games) ids.push_back(g.game_id());
        options_.on_acked(ids);
      }
      absl::MutexLock lock(&mu_);
      s.down = false;
      unacked_ -= static_cast<int64_t>(games.size());
      stats_.acked += static_cast<int64_t>(games.size());
      int64_t duplicates = 0;
      for (int outcome : response.outcomes()) {
        if (outcome == InsertResponse::DUPLICATE) ++duplicates;
      }
      stats_.duplicates += duplicates;
      PublishBacklog();
      if (acked_stored_ != nullptr) {
        acked_stored_->Increment(static_cast<double>(games.size()) - duplicates);
        acked_duplicate_->Increment(static_cast<double>(duplicates));
      }
      return true;
    }
    if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      if (games.size() > 1) {
        // Find the bad one(s): deliver one at a time.
        for (GameRecord& g : games) {
          std::vector<GameRecord> one;
          one.push_back(std::move(g));
          if (!Deliver(shard, one)) return false;
        }
        return true;
      }
      ZF_LOG(WARNING) << "replay writer: shard " << s.address << " refused game \""
                      << games[0].game_id() << "\": " << status.error_message();
      absl::MutexLock lock(&mu_);
      --unacked_;
      ++stats_.rejected;
      PublishBacklog();
      if (rejected_ != nullptr) rejected_->Increment();
      return true;
    }
    // Retryable: back off (full jitter) and resend the same games.
    absl::MutexLock lock(&mu_);
    s.down = true;
    if (options_.spool_path.empty() && !s.queue.empty()) {
      // The games still queued here were never sent (the batch in flight is `games`), so they
      // may go to a shard that is up instead of holding their memory slots until this one is back.
      std::deque<GameRecord> stranded;
      stranded.swap(s.queue);
      for (GameRecord& g : stranded) {
        const int to = RouteNewGame(g.game_id());
        const int home = ShardFor(g.game_id());
        if (shard == home && to != home) ++stats_.rerouted;  // once per game
        shards_[static_cast<size_t>(to)].queue.push_back(std::move(g));
      }
    }
    ++stats_.retries;
    if (retries_ != nullptr) retries_->Increment();
    double cap = std::min(absl::ToDoubleSeconds(options_.max_backoff),
                          absl::ToDoubleSeconds(options_.initial_backoff) *
                              static_cast<double>(uint64_t{1} << std::min(failures, 30)));
    ++failures;
    absl::Duration wait = absl::Seconds(std::uniform_real_distribution<double>(0.0, cap)(rng_));
    auto closed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&closed), wait)) {
      for (auto it = games.rbegin(); it != games.rend(); ++it) s.queue.push_front(std::move(*it));
      return false;
    }
  }
}

absl::Status ShardedReplayWriter::Flush(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || (unacked_ == 0 && spool_read_offset_ >= spool_size_);
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&done), deadline)) {
    return absl::DeadlineExceededError(
        absl::StrCat("replay writer: ", unacked_, " games still unacknowledged"));
  }
  if (unacked_ == 0 && spool_read_offset_ >= spool_size_) return absl::OkStatus();
  return absl::CancelledError("replay writer closed");
}

void ShardedReplayWriter::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
  }
  for (Thread& t : threads_) t.Join();
  std::vector<GameRecord> left;
  {
    absl::MutexLock lock(&mu_);
    for (Shard& s : shards_) {
      for (GameRecord& g : s.queue) left.push_back(std::move(g));
      s.queue.clear();
    }
    unacked_ = 0;
    PublishBacklog();
  }
  if (options_.spool_path.empty()) {
    if (!left.empty()) {
      ZF_LOG(ERROR) << "replay writer closed with " << left.size()
                    << " unacknowledged games and no spool: they are lost";
    }
  } else {
    for (const GameRecord& g : left) {
      if (absl::Status s = Spool(g, /*new_game=*/false); !s.ok()) ZF_LOG(ERROR) << s;
    }
    absl::MutexLock spool_lock(&spool_mu_);
    if (spool_fd_ >= 0) {
      // Compact: keep only what was not read back, so the next Create resends exactly that.
      int64_t begin = 0, end = 0;
      {
        absl::MutexLock lock(&mu_);
        begin = spool_read_offset_;
        end = spool_size_;
      }
      if (begin > 0) {
        std::string rest(static_cast<size_t>(end - begin), '\0');
        if (ReadAt(spool_fd_, begin, rest.data(), rest.size()) && ftruncate(spool_fd_, 0) == 0 &&
            ::lseek(spool_fd_, 0, SEEK_SET) == 0) {
          WriteAll(spool_fd_, rest.data(), rest.size());
        }
      }
      ::fsync(spool_fd_);
      ::close(spool_fd_);
      spool_fd_ = -1;
      // Nothing left to resend: no file either (a run directory holds a spool only when games
      // wait in it). Create() makes it again; a crash before this leaves it empty, which reads
      // as nothing to resend.
      if (end == begin && ::unlink(options_.spool_path.c_str()) != 0 && errno != ENOENT) {
        ZF_LOG(WARNING) << "spool: cannot remove the empty " << options_.spool_path << ": "
                        << std::strerror(errno);
      }
    }
  }
}

ShardedReplayWriterStats ShardedReplayWriter::stats() const {
  absl::MutexLock lock(&mu_);
  ShardedReplayWriterStats s = stats_;
  s.unacked = unacked_;
  return s;
}

}  // namespace zf::replay
