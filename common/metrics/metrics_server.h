// MetricsServer: serves the registries of one process over HTTP for Prometheus to scrape.
//
//   GET /metrics   200, Content-Type "text/plain; version=0.0.4; charset=utf-8", the merged
//                  exposition of every registry (see CollectAll in registry.h)
//   GET /          200, a short HTML page linking /metrics
//   anything else  404 (text/plain); a method other than GET or HEAD on the two paths above: 405
//
// Built on cpp-httplib (Debian's libcpp-httplib-dev). It replaced civetweb because Debian's
// civetweb creates its threads with a fixed 100 KiB stack (USE_STACK_SIZE=102400), and glibc
// carves static TLS out of that stack: `zf` (LibTorch + OpenBLAS + glog) has 106 KiB of static
// TLS (PT_TLS summed over its libraries), so pthread_create failed with EINVAL ("Cannot create
// threads"). The server's threads are plain std::threads with the default (RLIMIT_STACK) stack.
//
// cpp-httplib writes nothing to stderr; access logging is off. Its sends do not pass
// MSG_NOSIGNAL, so starting a server sets SIGPIPE to SIG_IGN for the process (a client closing
// early must not kill it; gRPC does the same); SIGCHLD is left alone. Keep-alive is off: each
// connection carries one request.
//
// Thread-safe. The server owns one listener thread (accept loop) and `num_threads` worker threads
// that answer requests; the destructor stops the listener and joins all of them. A client that
// sends nothing (or reads nothing) for 10 s loses its worker thread (read and write timeouts), so
// a slow client cannot block the server forever. Collecting a scrape takes registry mutexes only
// briefly and no lock is held while writing to a socket.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/metrics/registry.h"
#include "common/thread.h"

namespace httplib {
class Server;
}

namespace zf::metrics {

class MetricsServer {
 public:
  struct Options {
    // "HOST:PORT". HOST is an IPv4 address ("0.0.0.0" for every interface, "127.0.0.1" for
    // loopback only) or "localhost" (= 127.0.0.1); IPv6 is not supported. PORT is 0..65535; 0 asks
    // the kernel for a free port, which port() then reports.
    std::string listen_address = "0.0.0.0:9090";
    // Worker threads, 1..64. Scrapes are rare and cheap; 2 lets a slow client not block
    // Prometheus.
    int num_threads = 2;

    // Returns: OK; InvalidArgument naming the field and the offending value.
    absl::Status Validate() const;
  };

  // Starts serving `registries` (null entries are ignored). Returns once the port is listening.
  // Returns: InvalidArgument for bad options (malformed address, thread count);
  //          Unavailable when the address cannot be bound (port taken, address not local), with
  //            the address and the reason (strerror of bind) in the message.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Create(
      Options options, std::vector<std::shared_ptr<Registry>> registries);

  // Stops accepting, waits for requests in progress to finish, joins the server's threads.
  // Blocks for milliseconds (a request in progress can hold it up to the 10 s read/write timeout).
  ~MetricsServer();

  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The port actually bound (the kernel's choice when the address asked for port 0).
  int port() const { return port_; }

  // "HOST:PORT" with the bound port, e.g. "127.0.0.1:41371", for logs.
  const std::string& address() const { return address_; }

  // Adds a registry to those served; it appears from the next scrape on. Null is ignored.
  void AddRegistry(std::shared_ptr<Registry> registry) ABSL_LOCKS_EXCLUDED(mu_);

  // Returns the body that GET /metrics serves now.
  std::string Scrape() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit MetricsServer(std::vector<std::shared_ptr<Registry>> registries);

  absl::Status Start(const Options& options);

  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<Registry>> registries_ ABSL_GUARDED_BY(mu_);

  // Set once by Start() before the listener thread starts; cpp-httplib synchronizes itself.
  std::unique_ptr<httplib::Server> http_;
  std::unique_ptr<Thread> listener_;  // runs http_->listen_after_bind(); joined by the destructor
  std::unique_ptr<absl::Notification> listener_done_;
  int port_ = 0;
  std::string address_;
};

}  // namespace zf::metrics
