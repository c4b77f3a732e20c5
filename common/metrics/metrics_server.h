// MetricsServer: serves the registries of one process over HTTP for Prometheus to scrape.
//
//   GET /metrics   200, Content-Type "text/plain; version=0.0.4", the merged exposition of every
//                  registry (CollectAll and TextExposition in exposition.h)
//   other paths    404 (the Exposer also serves /metricsANYTHING: civetweb matches prefixes)
//
// Two HTTP servers can carry it (Options::backend), and by default the process picks:
//   - prometheus-cpp's Exposer (prometheus-cpp-pull, on civetweb), wherever it can start. It adds
//     its own exposer_* self-metrics (bytes sent, scrapes, latency) to the page and compresses
//     for clients that ask for gzip.
//   - cpp-httplib (Debian's libcpp-httplib-dev) in processes that load LibTorch (`zf-torch`: the
//     inference server, the learner, the evaluator, `zf run`). Debian's civetweb creates its
//     threads with a fixed 100 KiB stack (USE_STACK_SIZE=102400) and glibc carves a thread's
//     static TLS out of its stack: LibTorch + OpenBLAS + glog bring about 106 KiB of it, so every
//     pthread_create fails with EINVAL and the Exposer throws ("null context when constructing
//     CivetServer"). kAuto measures the process's static TLS (ProcessStaticTlsBytes) and takes
//     cpp-httplib above kExposerStaticTlsLimitBytes. Its threads are std::threads with the
//     default (RLIMIT_STACK) stack; keep-alive is off (one request per connection).
// Either way a client that sends (or reads) nothing for 10 s loses its worker thread, and
// SIGPIPE is set to SIG_IGN for the process (a client closing early must not kill it; gRPC does
// the same). Neither writes to stderr.
//
// Thread-safe. The server owns its threads (cpp-httplib: a listener and `num_threads` workers;
// civetweb: its master and `num_threads` workers); the destructor stops and joins them.
// Collecting a scrape takes registry mutexes only briefly and no lock is held while writing to a
// socket.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/thread.h"
#include "prometheus/registry.h"

namespace httplib {
class Server;
}
namespace prometheus {
class Exposer;
}

namespace zf::metrics {

// Above this much static TLS, civetweb's 100 KiB thread stacks leave too little room to run in
// (measured 2026-12-04, PT_TLS of each binary and every library ldd lists: `zf` 476 bytes,
// `zf-torch` 108,590, of which OpenBLAS 60 KiB, glog 29.8 KiB, libtorch_cpu 9.6 KiB).
inline constexpr size_t kExposerStaticTlsLimitBytes = 64 * 1024;

// The static TLS of every object loaded in this process (sum of PT_TLS segment sizes, each
// rounded up to its alignment), as dl_iterate_phdr reports them. Thread-safe.
size_t ProcessStaticTlsBytes();

class MetricsServer {
 public:
  enum class Backend {
    kAuto,  // kPrometheusExposer if ProcessStaticTlsBytes() <= kExposerStaticTlsLimitBytes
    kPrometheusExposer,  // prometheus::Exposer (civetweb)
    kHttplib,            // cpp-httplib
  };

  struct Options {
    // "HOST:PORT". HOST is an IPv4 address ("0.0.0.0" for every interface, "127.0.0.1" for
    // loopback only) or "localhost" (= 127.0.0.1); IPv6 is not supported. PORT is 0..65535; 0 asks
    // the kernel for a free port, which port() then reports.
    std::string listen_address = "0.0.0.0:9090";
    // Worker threads, 1..64. Scrapes are rare and cheap; 2 lets a slow client not block
    // Prometheus.
    int num_threads = 2;
    Backend backend = Backend::kAuto;

    // Returns: OK; InvalidArgument naming the field and the offending value.
    absl::Status Validate() const;
  };

  // Starts serving `registries` (null entries are ignored). Returns once the port is listening.
  // Returns: InvalidArgument for bad options (malformed address, thread count);
  //          Unavailable when the address cannot be bound (port taken, address not local), with
  //            the address and the reason (strerror of bind) in the message, or when the
  //            Exposer asked for by name cannot start its threads.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Create(
      Options options, std::vector<std::shared_ptr<prometheus::Registry>> registries);

  // Stops accepting, waits for requests in progress to finish, joins the server's threads.
  // Blocks for milliseconds (a request in progress can hold it up to the 10 s read/write timeout).
  ~MetricsServer();

  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The HTTP server that runs (never kAuto).
  Backend backend() const { return backend_; }

  // The port actually bound (the kernel's choice when the address asked for port 0).
  int port() const { return port_; }

  // "HOST:PORT" with the bound port, e.g. "127.0.0.1:41371", for logs.
  const std::string& address() const { return address_; }

  // Adds a registry to those served; it appears from the next scrape on. Null is ignored.
  void AddRegistry(std::shared_ptr<prometheus::Registry> registry) ABSL_LOCKS_EXCLUDED(mu_);

  // Returns the exposition of the registries, as GET /metrics serves it now (without the
  // Exposer's own exposer_* families).
  std::string Scrape() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class Collector;  // the prometheus::Collectable the Exposer serves: CollectAll(registries_)

  explicit MetricsServer(std::vector<std::shared_ptr<prometheus::Registry>> registries);

  std::vector<std::shared_ptr<prometheus::Registry>> Registries() const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status StartExposer(const Options& options);
  absl::Status StartHttplib(const Options& options);

  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<prometheus::Registry>> registries_ ABSL_GUARDED_BY(mu_);
  Backend backend_ = Backend::kAuto;

  // kPrometheusExposer: set once by StartExposer(); the Exposer holds collector_ weakly.
  std::shared_ptr<Collector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  // kHttplib: set once by StartHttplib() before the listener thread starts; cpp-httplib
  // synchronizes itself.
  std::unique_ptr<httplib::Server> http_;
  std::unique_ptr<Thread> listener_;  // runs http_->listen_after_bind(); joined by the destructor
  std::unique_ptr<absl::Notification> listener_done_;
  int port_ = 0;
  std::string address_;
};

}  // namespace zf::metrics
