// RemoteEvaluatorClient: the actor's side of the Evaluate stream (zerofleet.v1.Inference), to one
// inference server or to several.
//
// Servers: Options::target lists them, comma-separated: HOST:PORT, [IPv6]:PORT, unix:PATH, or a
// gRPC target with a scheme (dns:///..., ipv4:...), which gRPC resolves to one connection. A HOST
// that is a name is resolved here (getaddrinfo) to every address it has, one server each (a
// Kubernetes headless Service, compose replicas), and resolved again every resolve_interval, so
// servers can come and go while the client runs. Each server has its own channel and stream.
//
// Routing: a request goes to the usable server with the fewest rows outstanding (sent or queued
// to it and not answered), so a slower server gets less work, not an equal share. gRPC's own
// policies cannot do this here: round_robin and pick_first choose a connection per call, and
// one Evaluate stream is one call that carries every request. Usable: its stream is open and its
// channel connected, and it is not stalled. While another server has answered, one that has not
// yet answered on its new stream (new, restarted, reconnected after a stall) is on probation: it
// gets no request of its own, only a copy of one routed to another server (a probe, one at a
// time), and joins once it answers. So a server that accepts connections but never answers
// (SIGSTOP) cannot swallow the load, nor hold up the search whose request probes it.
//
// Failover: an evaluation has no side effect, so an unanswered request can always be sent again.
// A server that is shutting down says so on the stream (a drain notice): it then gets no new
// work, the requests routed to it and not yet written go to the others at once, and the client
// closes its side of the stream and reads on, so the answers the server still writes (those it
// was computing) are not lost to a reset stream. When a server's stream ends (it died, drained
// with UNAVAILABLE, the network went, keepalive gave up) its unanswered requests are routed
// again at once to the others. When a server has had
// a request unanswered for stall_timeout (or 4x its recent answer latency, if longer) while
// another server is usable, it is stalled (SIGSTOP, a hung GPU): it gets no new work and its
// unanswered requests are sent to the others too; whichever answer comes first is used and later
// duplicates are dropped. It is then probed (above) until it answers again. With no usable server,
// requests wait and are sent when one becomes usable (reconnecting as before), so a restarted
// server delays answers but loses none. Answers with a retryable error_code (RESOURCE_EXHAUSTED:
// the server's queue is full; CANCELLED or UNAVAILABLE: it is shutting down) are routed again
// after a backoff. Other errors (INVALID_ARGUMENT, ...) complete the request with that status.
//
// Planes: once a stream's server has said in its initial metadata that it accepts DTYPE_BITS
// (every server since it existed; plane_bits.h), requests whose values are all 0 or 1 are sent
// packed eight to a byte; before that (the stream's first requests) and to older servers they go
// as DTYPE_UINT8. Both kinds of server can be mixed and swapped under a running client.
//
// Threads: per server, a connection thread that (re)opens its stream and writes requests, and a
// reader per stream that reads answers and runs the callbacks; one monitor thread (stalls,
// delayed retries, waiting requests), and one resolver thread when a target needs resolving.
//
// Backoff: a new stream waits for the channel to connect (wait_for_ready; the channel reconnects
// on WireSettings' reconnect backoff). After a stream ends without having delivered an answer, the
// k-th consecutive retry waits min(max_backoff, initial_backoff * 2^k) * (1 + jitter * u), u
// uniform in [-1, 1).
//
// Thread-safety: thread-safe. Callbacks run on a reader thread (or on the thread calling Close,
// with Cancelled), with no client lock held; they may call Submit, not Close.
// Lifetime: the destructor calls Close.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc/channel.h"
#include "common/thread.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/zerofleet/v1/inference.grpc.pb.h"

namespace zf::inference {

class RemoteEvaluatorClient {
 public:
  // The answer to one request.
  struct Result {
    int rows = 0;
    int64_t model_version = 0;
    std::vector<float> policy_logits;  // rows * num_actions
    std::vector<float> wdl;            // rows * 3: P(win), P(draw), P(loss)
    // rows expected final margins (points / sqrt(H * W)) for the player to move, when the
    // server's model has a score head; empty otherwise.
    std::vector<float> score;
  };
  // Runs exactly once per accepted Submit: the Result, or the request's non-retryable error
  // (InvalidArgument, Internal for a malformed answer, ...), or Cancelled when the client is
  // closed first.
  using Callback = absl::AnyInvocable<void(absl::StatusOr<Result>)>;

  struct Options {
    // The inference servers, comma-separated (see the header comment). Required.
    std::string target;
    // Planes are [rows, C, H, W] uint8 with these C, H, W (see GetModelInfo). Required, >= 1.
    int input_channels = 0;
    int board_height = 0;
    int board_width = 0;
    grpc_util::WireSettings wire;
    absl::Duration initial_backoff = absl::Milliseconds(50);
    absl::Duration max_backoff = absl::Seconds(5);
    double jitter = 0.2;  // 0..1
    uint64_t seed = 1;    // of the jitter and of ties between equally loaded servers
    // A server with a request unanswered this long (or 4x its recent latency, if longer) while
    // another is usable is stalled: its requests go to the others.
    absl::Duration stall_timeout = absl::Seconds(1);
    // Names in `target` are resolved again this often.
    absl::Duration resolve_interval = absl::Seconds(5);
    // Where the client's metrics go (zf_inference_client_*: requests moved, servers by state);
    // none when null. Must outlive the client.
    prometheus::Registry* metrics = nullptr;

    // Returns: InvalidArgument naming the bad field.
    absl::Status Validate() const;
  };

  // Starts connecting (does not wait for the server).
  // Returns the client, or InvalidArgument (see Options::Validate).
  static absl::StatusOr<std::unique_ptr<RemoteEvaluatorClient>> Create(Options options);

  ~RemoteEvaluatorClient();
  RemoteEvaluatorClient(const RemoteEvaluatorClient&) = delete;
  RemoteEvaluatorClient& operator=(const RemoteEvaluatorClient&) = delete;

  // Queues `rows` positions (`planes`: rows * C * H * W bytes) for evaluation; never blocks on
  // the network. On OK, `done` runs exactly once later.
  // Returns: OK; InvalidArgument for rows < 1 or a wrong planes size; Cancelled after Close.
  absl::Status Submit(std::span<const uint8_t> planes, int rows, Callback done)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The server's model description. Blocks for at most `timeout`.
  // Returns: the info; DeadlineExceeded; Unavailable when the server cannot be reached.
  absl::StatusOr<zerofleet::v1::ModelInfo> GetModelInfo(absl::Duration timeout) const;

  // Stops the stream, joins the threads and completes every unanswered request with Cancelled.
  // Idempotent; must not be called from a callback.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  // Requests submitted and not yet completed.
  int64_t pending() const ABSL_LOCKS_EXCLUDED(mu_);
  // Streams opened so far, over every server (1 + reconnections with one server).
  int64_t streams_opened() const ABSL_LOCKS_EXCLUDED(mu_);

  // One server's state, for tests, logs and metrics.
  struct ServerState {
    std::string address;   // the gRPC target ("ipv4:10.0.0.2:50051", "unix:/run/zf.sock", ...)
    bool usable = false;   // its stream is open (on probation it still gets copies only)
    bool stalled = false;  // left for not answering, and not heard from since
    int64_t outstanding_rows = 0;
    int64_t answers = 0;  // answers received from it (duplicates included)
  };
  std::vector<ServerState> servers() const ABSL_LOCKS_EXCLUDED(mu_);
  // Requests sent again to another server because theirs died, drained or stalled.
  int64_t requests_moved() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Stream =
      grpc::ClientReaderWriter<zerofleet::v1::EvaluateRequest, zerofleet::v1::EvaluateResponse>;
  struct Link;
  struct Pending {
    // Shared with the writers, which send it (or a bit-packed copy) without copying it here.
    std::shared_ptr<const zerofleet::v1::EvaluateRequest> request;
    Callback done;
    int rows = 0;
    Link* link = nullptr;  // the server it is routed to; null while it waits or is delayed
    absl::Time routed;     // when it was routed to `link`
  };
  // One server address: its channel, its stream and its share of the requests. The fields after
  // `stub` are guarded by the client's mu_.
  struct Link {
    std::string address;
    std::string entry;  // the entry of Options::target it came from
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<zerofleet::v1::Inference::Stub> stub;
    std::unique_ptr<Thread> thread;
    bool retired = false;  // gone from its name's addresses: ends its stream and stops
    grpc::ClientContext* context = nullptr;  // of the open stream
    bool stream_broken = false;
    bool answered_on_stream = false;
    // This stream's server accepts DTYPE_BITS (from its initial metadata, known after its first
    // answer).
    bool accepts_bits = false;
    bool stalled = false;
    // The server said it is shutting down (the drain notice): no new work; the writer closes
    // this side of the stream.
    bool draining = false;
    // Stalled, and not heard from since (across reconnections): the metrics' "stalled".
    bool unanswered_since_stall = false;
    // On probation (not yet heard from on this stream while another server has answered): the
    // id of the request whose copy was sent here to see whether it answers (its own copy is
    // routed to another server), or 0.
    uint64_t probe_id = 0;
    std::deque<uint64_t> ready;                 // ids routed here, to write
    absl::flat_hash_map<uint64_t, int> routed;  // ids routed here and unanswered -> rows
    int64_t outstanding_rows = 0;               // sum of `routed`
    double latency_s = 0;                       // moving average of routed-to-answer time
    int64_t answers = 0;
    int64_t streams_opened = 0;
  };

  explicit RemoteEvaluatorClient(Options options);

  // Makes a Link for a gRPC target (not started). `name`: the host name it was resolved from
  // (for TLS name checks), or empty.
  std::unique_ptr<Link> MakeLink(const std::string& address, const std::string& entry,
                                 const std::string& name) const;
  void StartLink(Link* link) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ConnectionLoop(Link* link) ABSL_LOCKS_EXCLUDED(mu_);
  // Writes the requests routed to `link` to `stream` until it breaks or the client closes.
  void WriteLoop(Link* link, Stream* stream) ABSL_LOCKS_EXCLUDED(mu_);
  // Reads answers until the stream ends, then marks it broken and routes its requests again.
  void ReadLoop(Link* link, Stream* stream, grpc::ClientContext* context) ABSL_LOCKS_EXCLUDED(mu_);
  // Stalls, delayed retries and waiting requests, every few milliseconds.
  void MonitorLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Resolves the named entries of the target every resolve_interval.
  void ResolverLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Makes the set of links of `entry` the given addresses.
  void UpdateEntry(const std::string& entry, const std::string& name,
                   const std::vector<std::string>& addresses) ABSL_LOCKS_EXCLUDED(mu_);

  bool Usable(const Link& link) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends `id` to the usable link with the fewest outstanding rows (not `avoid`), or leaves it
  // waiting. Returns the link chosen, or null.
  Link* Route(uint64_t id, const Link* avoid = nullptr) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `id` off its link's books (it stays in pending_).
  void Unroute(Pending& pending, uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Routes every request of `link` again, elsewhere when possible (counted as moved).
  void RouteAway(Link* link) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Routes the requests of `link` not yet written elsewhere (counted as moved); the written
  // ones stay, to be answered on its stream.
  void RouteUnwrittenAway(Link* link) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes pending `id` off `from`'s books and routes it again, elsewhere when possible (counted
  // as moved).
  void MoveElsewhere(uint64_t id, Link* from) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RouteWaiting() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Duration Backoff(int attempt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);  // by request id (= send order)
  std::set<uint64_t> waiting_ ABSL_GUARDED_BY(mu_);           // ids routed nowhere, oldest first
  std::multimap<absl::Time, uint64_t> delayed_ ABSL_GUARDED_BY(mu_);  // ids to route later
  std::vector<std::unique_ptr<Link>> links_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Link>> retired_ ABSL_GUARDED_BY(mu_);  // joined by Close
  int64_t requests_moved_ ABSL_GUARDED_BY(mu_) = 0;
  // Null without Options::metrics.
  prometheus::Counter* moved_counter_ = nullptr;
  prometheus::Gauge* servers_usable_ = nullptr;
  prometheus::Gauge* servers_stalled_ = nullptr;
  prometheus::Gauge* servers_down_ = nullptr;
  int64_t streams_opened_ ABSL_GUARDED_BY(mu_) = 0;
  size_t next_tie_ ABSL_GUARDED_BY(mu_) = 0;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);

  absl::Mutex join_mu_;
  std::unique_ptr<Thread> monitor_ ABSL_GUARDED_BY(join_mu_);
  std::unique_ptr<Thread> resolver_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace zf::inference
