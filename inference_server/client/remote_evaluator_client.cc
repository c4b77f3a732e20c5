#include "inference_server/client/remote_evaluator_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/grpc/status.h"
#include "common/logging.h"
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

// One comma-separated entry of Options::target.
struct TargetEntry {
  std::string entry;  // as written
  std::string name;   // the host name to resolve; empty: `entry` is one gRPC target as it is
  std::string port;
};

absl::StatusOr<std::vector<TargetEntry>> ParseTarget(const std::string& target) {
  std::vector<TargetEntry> entries;
  for (absl::string_view piece : absl::StrSplit(target, ',')) {
    const std::string entry(absl::StripAsciiWhitespace(piece));
    auto bad = [&](const char* why) {
      return absl::InvalidArgumentError(
          absl::StrCat("RemoteEvaluatorClient: target entry \"", entry, "\" in \"", target, "\" ",
                       why, " (expected HOST:PORT, [IPv6]:PORT, unix:PATH or a gRPC ",
                       "target with a scheme, comma-separated)"));
    };
    if (entry.empty()) return bad("is empty");
    const bool has_scheme =
        entry.find(':') != std::string::npos &&
        (entry.rfind("unix:", 0) == 0 || entry.rfind("unix-abstract:", 0) == 0 ||
         entry.rfind("ipv4:", 0) == 0 || entry.rfind("ipv6:", 0) == 0 ||
         entry.rfind("dns:", 0) == 0);
    if (has_scheme) {
      entries.push_back({entry, "", ""});
      continue;
    }
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos) return bad("has no :PORT");
    const std::string host = entry.substr(0, colon);
    const std::string port = entry.substr(colon + 1);
    int port_number = 0;
    if (!absl::SimpleAtoi(port, &port_number) || port_number < 1 || port_number > 65535) {
      return bad("has no port in 1..65535");
    }
    if (host.empty()) return bad("has no host");
    in_addr v4;
    if (host.front() == '[' || inet_pton(AF_INET, host.c_str(), &v4) == 1) {
      entries.push_back({entry, "", ""});  // an address: one server
    } else {
      entries.push_back({entry, host, port});
    }
  }
  return entries;
}

// The gRPC targets of every address `name` has, sorted; empty with the error on failure.
std::vector<std::string> Resolve(const std::string& name, const std::string& port,
                                 std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(name.c_str(), port.c_str(), &hints, &found);
  std::vector<std::string> addresses;
  if (rc != 0) {
    *error = gai_strerror(rc);
    return addresses;
  }
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof(text));
      addresses.push_back(absl::StrCat("ipv4:", text, ":", port));
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, text,
                sizeof(text));
      addresses.push_back(absl::StrCat("ipv6:[", text, "]:", port));
    }
  }
  freeaddrinfo(found);
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  return addresses;
}

// How often the monitor looks at stalls, delayed retries and waiting requests.
constexpr absl::Duration kMonitorTick = absl::Milliseconds(20);

}  // namespace

absl::Status RemoteEvaluatorClient::Options::Validate() const {
  if (target.empty())
    return absl::InvalidArgumentError("RemoteEvaluatorClient: target is required");
  if (absl::StatusOr<std::vector<TargetEntry>> entries = ParseTarget(target); !entries.ok()) {
    return entries.status();
  }
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
  if (stall_timeout <= absl::ZeroDuration() || resolve_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "RemoteEvaluatorClient: stall_timeout and resolve_interval must be positive");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RemoteEvaluatorClient>> RemoteEvaluatorClient::Create(
    Options options) {
  absl::Status valid = options.Validate();
  if (!valid.ok()) return valid;
  const std::vector<TargetEntry> entries = *ParseTarget(options.target);
  std::unique_ptr<RemoteEvaluatorClient> client(new RemoteEvaluatorClient(std::move(options)));
  RemoteEvaluatorClient* raw = client.get();
  if (prometheus::Registry* registry = client->options_.metrics; registry != nullptr) {
    client->moved_counter_ =
        &prometheus::BuildCounter()
             .Name("zf_inference_client_requests_moved_total")
             .Help(
                 "Evaluation requests sent again to another inference server because theirs "
                 "died, drained or stopped answering.")
             .Register(*registry)
             .Add({});
    auto& servers = prometheus::BuildGauge()
                        .Name("zf_inference_client_servers")
                        .Help(
                            "Inference servers this client knows, by state: usable (stream "
                            "open), stalled (left for not answering) or down (reconnecting).")
                        .Register(*registry);
    client->servers_usable_ = &servers.Add({{"state", "usable"}});
    client->servers_stalled_ = &servers.Add({{"state", "stalled"}});
    client->servers_down_ = &servers.Add({{"state", "down"}});
  }
  std::vector<TargetEntry> named;
  {
    absl::MutexLock lock(&client->mu_);
    for (const TargetEntry& entry : entries) {
      if (!entry.name.empty()) {
        named.push_back(entry);
        continue;
      }
      client->links_.push_back(client->MakeLink(entry.entry, entry.entry, ""));
      client->StartLink(client->links_.back().get());
    }
  }
  absl::MutexLock lock(&client->join_mu_);
  client->monitor_ = std::make_unique<Thread>("zf-eval-mon", [raw] { raw->MonitorLoop(); });
  if (!named.empty()) {
    client->resolver_ = std::make_unique<Thread>("zf-eval-dns", [raw, named] {
      // Resolves each named entry now and every resolve_interval.
      while (true) {
        for (const TargetEntry& entry : named) {
          std::string error;
          std::vector<std::string> addresses = Resolve(entry.name, entry.port, &error);
          if (addresses.empty()) {
            ZF_LOG(WARNING) << "inference target " << entry.entry << ": cannot resolve "
                            << entry.name << " (" << error << "); keeping its known servers";
            continue;
          }
          raw->UpdateEntry(entry.entry, entry.name, addresses);
        }
        absl::MutexLock l(&raw->mu_);
        if (raw->mu_.AwaitWithTimeout(absl::Condition(&raw->closed_),
                                      raw->options_.resolve_interval)) {
          return;
        }
      }
    });
  }
  return client;
}

RemoteEvaluatorClient::RemoteEvaluatorClient(Options options)
    : options_(std::move(options)), rng_(options_.seed) {}

std::unique_ptr<RemoteEvaluatorClient::Link> RemoteEvaluatorClient::MakeLink(
    const std::string& address, const std::string& entry, const std::string& name) const {
  auto link = std::make_unique<Link>();
  link->address = address;
  link->entry = entry;
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
  if (!name.empty()) {
    // An address resolved from `name`: certificates and :authority still name the host.
    if (options_.wire.tls.server_name.empty() && !options_.wire.tls.ca_file.empty()) {
      args.SetSslTargetNameOverride(name);
    }
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, name);
  }
  link->channel = grpc::CreateCustomChannel(
      address, grpc_util::MakeChannelCredentials(options_.wire.tls), args);
  link->stub = zerofleet::v1::Inference::NewStub(link->channel);
  return link;
}

void RemoteEvaluatorClient::StartLink(Link* link) {
  link->thread = std::make_unique<Thread>("zf-eval-conn", [this, link] { ConnectionLoop(link); });
}

void RemoteEvaluatorClient::UpdateEntry(const std::string& entry, const std::string& name,
                                        const std::vector<std::string>& addresses) {
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  std::set<std::string> wanted(addresses.begin(), addresses.end());
  for (auto it = links_.begin(); it != links_.end();) {
    Link* link = it->get();
    if (link->entry != entry) {
      ++it;
    } else if (wanted.erase(link->address) > 0) {
      ++it;  // still there
    } else {
      ZF_LOG(INFO) << "inference server " << link->address << " left " << entry;
      link->retired = true;
      RouteAway(link);
      if (link->context != nullptr) link->context->TryCancel();
      retired_.push_back(std::move(*it));
      it = links_.erase(it);
    }
  }
  for (const std::string& address : wanted) {
    ZF_LOG(INFO) << "inference server " << address << " joined " << entry;
    links_.push_back(MakeLink(address, entry, name));
    StartLink(links_.back().get());
  }
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
  pending_.emplace(id, Pending{std::move(request), std::move(done), rows});
  waiting_.insert(id);
  RouteWaiting();
  return absl::OkStatus();
}

bool RemoteEvaluatorClient::Usable(const Link& link) const {
  if (link.retired || link.context == nullptr || link.stream_broken || link.stalled ||
      link.draining) {
    return false;
  }
  return link.answered_on_stream || link.channel->GetState(false) == GRPC_CHANNEL_READY;
}

RemoteEvaluatorClient::Link* RemoteEvaluatorClient::Route(uint64_t id, const Link* avoid) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return nullptr;
  Pending& pending = it->second;
  Link* best = nullptr;
  const size_t n = links_.size();
  bool any_proven = false;
  for (const auto& link : links_) {
    any_proven = any_proven || (link.get() != avoid && link->answered_on_stream && Usable(*link));
  }
  Link* probation = nullptr;
  for (size_t k = 0; k < n; ++k) {
    Link* link = links_[(next_tie_ + k) % n].get();
    if (link == avoid || !Usable(*link)) continue;
    // While another server has answered, one not yet heard from on its stream (new, restarted,
    // or reconnected after a stall) is on probation: it gets no request of its own, only a copy
    // of one routed elsewhere, and joins when it answers. So one that accepts connections but
    // never answers (SIGSTOP) holds up no search.
    if (!link->answered_on_stream && any_proven) {
      if (link->probe_id == 0 && probation == nullptr) probation = link;
      continue;
    }
    if (best == nullptr || link->outstanding_rows < best->outstanding_rows) best = link;
  }
  ++next_tie_;
  if (best == nullptr) {
    pending.link = nullptr;
    waiting_.insert(id);
    return nullptr;
  }
  pending.link = best;
  pending.routed = absl::Now();
  best->routed[id] = pending.rows;
  best->outstanding_rows += pending.rows;
  best->ready.push_back(id);
  if (probation != nullptr) {
    probation->probe_id = id;
    probation->ready.push_back(id);
  }
  return best;
}

void RemoteEvaluatorClient::Unroute(Pending& pending, uint64_t id) {
  waiting_.erase(id);
  if (pending.link == nullptr) return;
  pending.link->routed.erase(id);
  pending.link->outstanding_rows -= pending.rows;
  pending.link = nullptr;
}

void RemoteEvaluatorClient::RouteAway(Link* link) {
  link->ready.clear();
  link->probe_id = 0;
  if (link->routed.empty() || closed_) return;
  std::vector<uint64_t> ids;
  ids.reserve(link->routed.size());
  for (const auto& [id, rows] : link->routed) ids.push_back(id);
  std::sort(ids.begin(), ids.end());  // oldest first
  for (uint64_t id : ids) MoveElsewhere(id, link);
}

void RemoteEvaluatorClient::MoveElsewhere(uint64_t id, Link* from) {
  Unroute(pending_.at(id), id);
  ++requests_moved_;
  if (moved_counter_ != nullptr) moved_counter_->Increment();
  Route(id, from);
}

void RemoteEvaluatorClient::RouteUnwrittenAway(Link* link) {
  std::deque<uint64_t> ready;
  ready.swap(link->ready);
  link->probe_id = 0;
  if (closed_) return;
  for (uint64_t id : ready) {
    auto it = pending_.find(id);
    if (it == pending_.end() || it->second.link != link) continue;  // answered, moved, a probe
    MoveElsewhere(id, link);
  }
}

void RemoteEvaluatorClient::RouteWaiting() {
  while (!waiting_.empty()) {
    const uint64_t id = *waiting_.begin();
    waiting_.erase(waiting_.begin());
    if (Route(id) == nullptr) return;  // put back: nowhere to go now
  }
}

absl::StatusOr<zerofleet::v1::ModelInfo> RemoteEvaluatorClient::GetModelInfo(
    absl::Duration timeout) const {
  zerofleet::v1::Inference::Stub* stub = nullptr;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& link : links_) {
      if (stub == nullptr || (link->answered_on_stream && !link->stalled)) stub = link->stub.get();
      if (link->answered_on_stream && !link->stalled) break;
    }
  }
  if (stub == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("no inference server address known yet for ", options_.target));
  }
  // Links are never destroyed before Close, so `stub` outlives the call.
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  zerofleet::v1::ModelInfo info;
  grpc::Status status = stub->GetModelInfo(&context, {}, &info);
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

int64_t RemoteEvaluatorClient::requests_moved() const {
  absl::MutexLock lock(&mu_);
  return requests_moved_;
}

std::vector<RemoteEvaluatorClient::ServerState> RemoteEvaluatorClient::servers() const {
  absl::MutexLock lock(&mu_);
  std::vector<ServerState> states;
  for (const auto& link : links_) {
    states.push_back({link->address, Usable(*link), link->stalled || link->unanswered_since_stall,
                      link->outstanding_rows, link->answers});
  }
  return states;
}

absl::Duration RemoteEvaluatorClient::Backoff(int attempt) {
  absl::Duration base = options_.initial_backoff;
  for (int i = 0; i < attempt && base < options_.max_backoff; ++i) base *= 2;
  base = std::min(base, options_.max_backoff);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  return base * (1.0 + options_.jitter * u(rng_));
}

void RemoteEvaluatorClient::ConnectionLoop(Link* link) {
  int attempt = 0;
  while (true) {
    auto context = std::make_unique<grpc::ClientContext>();
    {
      absl::MutexLock lock(&mu_);
      if (closed_ || link->retired) return;
      link->context = context.get();
      link->stream_broken = false;
      link->answered_on_stream = false;
      link->accepts_bits = false;
      link->stalled = false;
      link->draining = false;
      link->probe_id = 0;
      ++link->streams_opened;
      ++streams_opened_;
    }
    // Wait for the channel to connect rather than fail fast while the server is away: the
    // channel reconnects on its own backoff (WireSettings), and failing fast would stack this
    // loop's backoff on top of it (seen: 14 s to reconnect to a restarted server, not 2 s).
    // Close(), a stall or a retirement cancels a stream that is still waiting.
    context->set_wait_for_ready(true);
    std::unique_ptr<Stream> stream = link->stub->Evaluate(context.get());
    {
      Thread reader("zf-eval-read",
                    [this, link, s = stream.get(), c = context.get()] { ReadLoop(link, s, c); });
      WriteLoop(link, stream.get());
      // A failed Write means the call is over (Read fails too, once the answers already received
      // are read: cancelling here would discard them). Only Close, a stall or a retirement
      // cancels a live stream.
      bool cancel;
      {
        absl::MutexLock lock(&mu_);
        cancel = closed_ || link->retired;
      }
      if (cancel) context->TryCancel();
    }
    stream->Finish();
    absl::MutexLock lock(&mu_);
    link->context = nullptr;
    link->stream_broken = true;
    RouteAway(link);
    attempt = link->answered_on_stream ? 0 : attempt + 1;
    const absl::Duration wait = Backoff(attempt);
    auto stop = [this, link]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || link->retired; };
    mu_.AwaitWithTimeout(absl::Condition(&stop), wait);
  }
}

void RemoteEvaluatorClient::WriteLoop(Link* link, Stream* stream) {
  const int64_t plane_size =
      int64_t{options_.input_channels} * options_.board_height * options_.board_width;
  EvaluateRequest packed;
  while (true) {
    std::shared_ptr<const EvaluateRequest> request;
    bool bits = false;
    bool draining;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this, link]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return closed_ || link->stream_broken || link->retired || link->draining ||
               !link->ready.empty();
      };
      mu_.Await(absl::Condition(&wake));
      if (closed_ || link->stream_broken || link->retired) return;
      draining = link->draining;
      if (!draining) {
        const uint64_t id = link->ready.front();
        link->ready.pop_front();
        auto it = pending_.find(id);
        const bool probe = id == link->probe_id;
        if (it == pending_.end() || (it->second.link != link && !probe)) {  // answered or moved
          if (probe) link->probe_id = 0;  // answered before it was sent: another copy next time
          continue;
        }
        request = it->second.request;
        bits = link->accepts_bits;
      }
    }
    if (draining) {
      // The server is going: close this side (it then ends the stream once its answers are
      // written), and let the reader read them.
      stream->WritesDone();
      return;
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
      link->stream_broken = true;
      RouteAway(link);  // its requests go to the other servers, or wait for one
      return;
    }
  }
}

void RemoteEvaluatorClient::ReadLoop(Link* link, Stream* stream, grpc::ClientContext* context) {
  EvaluateResponse response;
  bool first = true;
  while (stream->Read(&response)) {
    Callback done;
    int rows = 0;
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
      if (first) link->accepts_bits = accepts_bits;
      first = false;
      if (response.draining()) {
        // The server is going (a notice, not an answer): what is routed here and not yet
        // written goes elsewhere now; what was written is answered on this stream.
        ZF_LOG(INFO) << "inference server " << link->address << " is shutting down";
        link->draining = true;
        RouteUnwrittenAway(link);
        continue;
      }
      link->answered_on_stream = true;
      link->unanswered_since_stall = false;
      link->probe_id = 0;
      ++link->answers;
      auto it = pending_.find(response.request_id());
      if (it == pending_.end()) continue;  // a duplicate of a re-sent request
      Pending& pending = it->second;
      if (Retryable(response.error_code())) {
        if (pending.link == link) {
          Unroute(pending, it->first);
          delayed_.emplace(absl::Now() + Backoff(0), it->first);
        }
        continue;
      }
      if (pending.link == link) {
        const double seconds = absl::ToDoubleSeconds(absl::Now() - pending.routed);
        link->latency_s = link->answers == 1 ? seconds : 0.9 * link->latency_s + 0.1 * seconds;
      }
      Unroute(pending, it->first);
      rows = pending.rows;
      done = std::move(pending.done);
      pending_.erase(it);
      RouteWaiting();  // a first answer makes a server usable
    }
    done(Decode(response, rows));
  }
  absl::MutexLock lock(&mu_);
  link->stream_broken = true;
  RouteAway(link);
}

void RemoteEvaluatorClient::MonitorLoop() {
  absl::MutexLock lock(&mu_);
  while (!closed_) {
    const absl::Time now = absl::Now();
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      const uint64_t id = delayed_.begin()->second;
      delayed_.erase(delayed_.begin());
      auto it = pending_.find(id);
      if (it != pending_.end() && it->second.link == nullptr) waiting_.insert(id);
    }
    RouteWaiting();
    for (const auto& owned : links_) {
      Link* link = owned.get();
      if (link->stalled || link->stream_broken || link->context == nullptr ||
          link->routed.empty()) {
        continue;
      }
      absl::Time oldest = absl::InfiniteFuture();
      for (const auto& [id, rows] : link->routed) oldest = std::min(oldest, pending_.at(id).routed);
      const absl::Duration limit =
          std::max(options_.stall_timeout, absl::Seconds(4 * link->latency_s));
      if (now - oldest <= limit) continue;
      bool elsewhere = false;
      for (const auto& other : links_) elsewhere = elsewhere || (other != owned && Usable(*other));
      if (!elsewhere) continue;  // nowhere better: keep waiting for it
      ZF_LOG(WARNING) << "inference server " << link->address << " has not answered for "
                      << absl::FormatDuration(now - oldest) << "; moving its "
                      << link->routed.size() << " requests to the others";
      link->stalled = true;
      link->unanswered_since_stall = true;
      RouteAway(link);
      // Its stream ends; on the next one it is on probation: copies only until it answers.
      link->context->TryCancel();
    }
    if (servers_usable_ != nullptr) {
      int usable = 0, stalled = 0;
      for (const auto& link : links_) {
        if (link->stalled || link->unanswered_since_stall) {
          ++stalled;  // on probation until it answers again
        } else if (Usable(*link)) {
          ++usable;
        }
      }
      servers_usable_->Set(usable);
      servers_stalled_->Set(stalled);
      servers_down_->Set(static_cast<double>(links_.size()) - usable - stalled);
    }
    absl::Time next = now + kMonitorTick;
    if (!delayed_.empty()) next = std::min(next, delayed_.begin()->first);
    mu_.AwaitWithDeadline(absl::Condition(&closed_), next);
  }
}

void RemoteEvaluatorClient::Close() {
  absl::MutexLock join_lock(&join_mu_);
  std::vector<Link*> links;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    for (const auto& link : links_) {
      if (link->context != nullptr) link->context->TryCancel();
      links.push_back(link.get());
    }
    for (const auto& link : retired_) links.push_back(link.get());
  }
  // Links are only added while open and never destroyed before the client: safe unlocked.
  for (Link* link : links) {
    if (link->thread != nullptr) link->thread->Join();
  }
  if (monitor_ != nullptr) monitor_->Join();
  if (resolver_ != nullptr) resolver_->Join();
  std::map<uint64_t, Pending> orphans;
  {
    absl::MutexLock lock(&mu_);
    orphans.swap(pending_);
    waiting_.clear();
    delayed_.clear();
    for (const auto& link : links_) {
      link->ready.clear();
      link->routed.clear();
      link->outstanding_rows = 0;
    }
  }
  for (auto& [id, pending] : orphans) {
    pending.done(absl::CancelledError("RemoteEvaluatorClient closed"));
  }
}

}  // namespace zf::inference
