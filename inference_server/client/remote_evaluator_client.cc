#include "inference_server/client/remote_evaluator_client.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc/status.h"
#include "inference_server/plane_bits.h"

namespace zf::inference {
namespace {

using zerofleet::v1::EvaluateRequest;
using zerofleet::v1::EvaluateResponse;

bool Retryable(int code) {
  return code == static_cast<int>(absl::StatusCode::kResourceExhausted) ||
         code == static_cast<int>(absl::StatusCode::kCancelled) ||
         code == static_cast<int>(absl::StatusCode::kUnavailable);
}

absl::StatusOr<std::vector<float>> Unpack(const zerofleet::v1::Tensor& tensor, int64_t rows,
                                          int64_t columns, const char* name) {
  static_assert(std::endian::native == std::endian::little);
  if (tensor.dtype() != zerofleet::v1::DTYPE_FLOAT32 || tensor.shape_size() != 2 ||
      tensor.shape(0) != rows || tensor.shape(1) != columns ||
      static_cast<int64_t>(tensor.data().size()) != rows * columns * 4) {
    return absl::InternalError(absl::StrCat("malformed ", name, " in the server's answer"));
  }
  std::vector<float> out(static_cast<size_t>(rows * columns));
  std::memcpy(out.data(), tensor.data().data(), tensor.data().size());
  return out;
}

absl::StatusOr<RemoteEvaluatorClient::Result> Decode(const EvaluateResponse& response,
                                                     int64_t rows) {
  if (response.error_code() != 0) {
    return absl::Status(static_cast<absl::StatusCode>(response.error_code()),
                        response.error_message());
  }
  RemoteEvaluatorClient::Result result;
  result.rows = static_cast<int>(rows);
  result.model_version = response.model_version();
  const int64_t actions =
      response.policy_logits().shape_size() == 2 ? response.policy_logits().shape(1) : 0;
  if (actions < 1) return absl::InternalError("malformed policy_logits in the server's answer");
  absl::StatusOr<std::vector<float>> logits =
      Unpack(response.policy_logits(), rows, actions, "policy_logits");
  if (!logits.ok()) return logits.status();
  absl::StatusOr<std::vector<float>> wdl = Unpack(response.wdl(), rows, 3, "wdl");
  if (!wdl.ok()) return wdl.status();
  result.policy_logits = *std::move(logits);
  result.wdl = *std::move(wdl);
  if (response.has_score()) {
    absl::StatusOr<std::vector<float>> score = Unpack(response.score(), rows, 1, "score");
    if (!score.ok()) return score.status();
    result.score = *std::move(score);
  }
  return result;
}

}  // namespace

absl::Status RemoteEvaluatorClient::Options::Validate() const {
  if (target.empty())
    return absl::InvalidArgumentError("RemoteEvaluatorClient: target is required");
  if (input_channels < 1 || board_height < 1 || board_width < 1) {
    return absl::InvalidArgumentError(absl::StrCat("RemoteEvaluatorClient: plane shape ",
                                                   input_channels, "x", board_height, "x",
                                                   board_width, " must be positive"));
  }
  if (initial_backoff <= absl::ZeroDuration() || max_backoff < initial_backoff) {
    return absl::InvalidArgumentError(
        "RemoteEvaluatorClient: need 0 < initial_backoff <= max_backoff");
  }
  if (!(jitter >= 0 && jitter <= 1)) {
    return absl::InvalidArgumentError("RemoteEvaluatorClient: jitter must be in [0, 1]");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RemoteEvaluatorClient>> RemoteEvaluatorClient::Create(
    Options options) {
  absl::Status valid = options.Validate();
  if (!valid.ok()) return valid;
  std::unique_ptr<RemoteEvaluatorClient> client(new RemoteEvaluatorClient(std::move(options)));
  absl::MutexLock lock(&client->join_mu_);
  RemoteEvaluatorClient* raw = client.get();
  client->connection_ = std::make_unique<Thread>("zf-eval-conn", [raw] { raw->ConnectionLoop(); });
  return client;
}

RemoteEvaluatorClient::RemoteEvaluatorClient(Options options)
    : options_(std::move(options)), rng_(options_.seed) {
  grpc::ChannelArguments args = grpc_util::ClientChannelArguments(options_.wire);
  // The channel's own reconnection backoff (default up to 120 s) must not outlast ours.
  const int initial_ms = static_cast<int>(absl::ToInt64Milliseconds(options_.initial_backoff));
  const int max_ms = static_cast<int>(absl::ToInt64Milliseconds(options_.max_backoff));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, std::max(1, initial_ms));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, std::max(1, initial_ms));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, std::max(1, max_ms));
  // A connection of its own: gRPC otherwise shares one connection among a process's channels to
  // the same target, and a server allows 128 streams per connection (WireSettings), so past 128
  // clients in one process (zf bench inference --streams 1000) the rest waited unseen.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  channel_ = grpc::CreateCustomChannel(options_.target,
                                       grpc_util::MakeChannelCredentials(options_.wire.tls), args);
  stub_ = zerofleet::v1::Inference::NewStub(channel_);
}

RemoteEvaluatorClient::~RemoteEvaluatorClient() { Close(); }

absl::Status RemoteEvaluatorClient::Submit(std::span<const uint8_t> planes, int rows,
                                           Callback done) {
  const int64_t plane_size =
      int64_t{options_.input_channels} * options_.board_height * options_.board_width;
  if (rows < 1 || static_cast<int64_t>(planes.size()) != rows * plane_size) {
    return absl::InvalidArgumentError(absl::StrCat("Submit: ", planes.size(), " bytes for ", rows,
                                                   " rows, expected ", rows, " x ", plane_size));
  }
  auto request = std::make_shared<EvaluateRequest>();
  zerofleet::v1::Tensor* tensor = request->mutable_planes();
  tensor->set_dtype(zerofleet::v1::DTYPE_UINT8);
  tensor->add_shape(rows);
  tensor->add_shape(options_.input_channels);
  tensor->add_shape(options_.board_height);
  tensor->add_shape(options_.board_width);
  tensor->set_data(reinterpret_cast<const char*>(planes.data()), planes.size());
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::CancelledError("RemoteEvaluatorClient is closed");
  const uint64_t id = next_id_++;
  request->set_request_id(id);
  pending_.emplace(id, Pending{std::move(request), std::move(done)});
  ready_.push_back(id);
  return absl::OkStatus();
}

absl::StatusOr<zerofleet::v1::ModelInfo> RemoteEvaluatorClient::GetModelInfo(
    absl::Duration timeout) const {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  zerofleet::v1::ModelInfo info;
  grpc::Status status = stub_->GetModelInfo(&context, {}, &info);
  if (!status.ok()) return grpc_util::FromGrpcStatus(status);
  return info;
}

int64_t RemoteEvaluatorClient::pending() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(pending_.size());
}

int64_t RemoteEvaluatorClient::streams_opened() const {
  absl::MutexLock lock(&mu_);
  return streams_opened_;
}

absl::Duration RemoteEvaluatorClient::Backoff(int attempt) {
  absl::Duration base = options_.initial_backoff;
  for (int i = 0; i < attempt && base < options_.max_backoff; ++i) base *= 2;
  base = std::min(base, options_.max_backoff);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  return base * (1.0 + options_.jitter * u(rng_));
}

void RemoteEvaluatorClient::ConnectionLoop() {
  int attempt = 0;
  while (true) {
    auto context = std::make_unique<grpc::ClientContext>();
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      context_ = context.get();
      stream_broken_ = false;
      answered_on_stream_ = false;
      stream_accepts_bits_ = false;
      ++streams_opened_;
      // A new stream: send every unanswered request again, oldest first.
      ready_.clear();
      delayed_.clear();
      for (const auto& [id, pending] : pending_) ready_.push_back(id);
    }
    // Wait for the channel to connect rather than fail fast while the server is away: the
    // channel reconnects on its own backoff (WireSettings), and failing fast would stack this
    // loop's backoff on top of it (seen: 14 s to reconnect to a restarted server, not 2 s).
    // Close() cancels a stream that is still waiting.
    context->set_wait_for_ready(true);
    std::unique_ptr<Stream> stream = stub_->Evaluate(context.get());
    {
      Thread reader("zf-eval-read",
                    [this, s = stream.get(), c = context.get()] { ReadLoop(s, c); });
      WriteLoop(stream.get());
      // A failed Write means the call is over (Read fails too, once the answers already received
      // are read: cancelling here would discard them). Only Close cancels a live stream.
      bool closed;
      {
        absl::MutexLock lock(&mu_);
        closed = closed_;
      }
      if (closed) context->TryCancel();
    }
    stream->Finish();
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
    attempt = answered_on_stream_ ? 0 : attempt + 1;
    const absl::Duration wait = Backoff(attempt);
    mu_.AwaitWithTimeout(absl::Condition(&closed_), wait);
  }
}

void RemoteEvaluatorClient::WriteLoop(Stream* stream) {
  const int64_t plane_size =
      int64_t{options_.input_channels} * options_.board_height * options_.board_width;
  EvaluateRequest packed;
  while (true) {
    std::shared_ptr<const EvaluateRequest> request;
    bool bits;
    {
      absl::MutexLock lock(&mu_);
      while (true) {
        if (closed_ || stream_broken_) return;
        const absl::Time now = absl::Now();
        while (!delayed_.empty() && delayed_.begin()->first <= now) {
          ready_.push_back(delayed_.begin()->second);
          delayed_.erase(delayed_.begin());
        }
        if (!ready_.empty()) break;
        const absl::Time deadline =
            delayed_.empty() ? absl::InfiniteFuture() : delayed_.begin()->first;
        auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return closed_ || stream_broken_ || !ready_.empty();
        };
        mu_.AwaitWithDeadline(absl::Condition(&wake), deadline);
      }
      const uint64_t id = ready_.front();
      ready_.pop_front();
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;  // answered meanwhile
      request = it->second.request;
      bits = stream_accepts_bits_;
    }
    const EvaluateRequest* to_send = request.get();
    if (bits) {
      const std::string& data = request->planes().data();
      if (PackPlaneBits({reinterpret_cast<const uint8_t*>(data.data()), data.size()}, plane_size,
                        packed.mutable_planes()->mutable_data())) {
        packed.set_request_id(request->request_id());
        zerofleet::v1::Tensor* tensor = packed.mutable_planes();
        tensor->set_dtype(zerofleet::v1::DTYPE_BITS);
        *tensor->mutable_shape() = request->planes().shape();
        to_send = &packed;
      }
    }
    if (!stream->Write(*to_send)) {
      absl::MutexLock lock(&mu_);
      stream_broken_ = true;  // the request stays pending: re-sent on the next stream
      return;
    }
  }
}

void RemoteEvaluatorClient::ReadLoop(Stream* stream, grpc::ClientContext* context) {
  EvaluateResponse response;
  bool first = true;
  while (stream->Read(&response)) {
    Callback done;
    int64_t rows = 0;
    bool accepts_bits = false;
    if (first) {
      // The server's initial metadata has arrived with its first answer.
      const auto& metadata = context->GetServerInitialMetadata();
      auto found = metadata.find(std::string(kPlanesMetadataKey));
      accepts_bits = found != metadata.end() &&
                     std::string_view(found->second.data(), found->second.size()) == kPlanesBits;
    }
    {
      absl::MutexLock lock(&mu_);
      answered_on_stream_ = true;
      if (first) stream_accepts_bits_ = accepts_bits;
      first = false;
      auto it = pending_.find(response.request_id());
      if (it == pending_.end()) continue;  // a duplicate of a re-sent request
      if (Retryable(response.error_code())) {
        delayed_.emplace(absl::Now() + Backoff(0), it->first);
        continue;
      }
      rows = it->second.request->planes().shape(0);
      done = std::move(it->second.done);
      pending_.erase(it);
    }
    done(Decode(response, rows));
  }
  absl::MutexLock lock(&mu_);
  stream_broken_ = true;
}

void RemoteEvaluatorClient::Close() {
  absl::MutexLock join_lock(&join_mu_);
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  if (connection_ != nullptr) connection_->Join();
  std::map<uint64_t, Pending> orphans;
  {
    absl::MutexLock lock(&mu_);
    orphans.swap(pending_);
    ready_.clear();
    delayed_.clear();
  }
  for (auto& [id, pending] : orphans) {
    pending.done(absl::CancelledError("RemoteEvaluatorClient closed"));
  }
}

}  // namespace zf::inference
