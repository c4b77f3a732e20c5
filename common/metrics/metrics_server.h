// MetricsServer: serves the registries of one process over HTTP for Prometheus to scrape.
//
//   GET /metrics   200, Content-Type "text/plain; version=0.0.4; charset=utf-8", the merged
//                  exposition of every registry (see CollectAll in registry.h)
//   GET /          200, a short HTML page linking /metrics
//   anything else  404 (text/plain); a method other than GET or HEAD on the two paths above: 405
//
// Built on civetweb (the Debian package). civetweb's own log output never reaches stderr: while
// the server starts, its messages are gathered into the returned status; afterwards each one is
// logged once with ZF_LOG(WARNING) prefixed "civetweb: ". Access logging is off. Like every
// civetweb server, starting one sets SIGPIPE to SIG_IGN for the process (a client closing early
// must not kill it); SIGCHLD is left alone.
//
// Thread-safe. Requests are answered on `num_threads` civetweb worker threads, owned by the
// server and joined by its destructor; collecting a scrape takes registry mutexes only briefly and
// no lock is held while writing to a socket. Idle connections are closed after 10 s.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics/registry.h"

struct mg_connection;
struct mg_context;

namespace zf::metrics {

class MetricsServer {
 public:
  struct Options {
    // "HOST:PORT". HOST is an IPv4 address ("0.0.0.0" for every interface, "127.0.0.1" for
    // loopback only) or "localhost" (= 127.0.0.1); IPv6 is not supported by Debian's civetweb
    // build. PORT is 0..65535; 0 asks the kernel for a free port, which port() then reports.
    std::string listen_address = "0.0.0.0:9090";
    // civetweb worker threads, 1..64. Scrapes are rare and cheap; 2 lets a slow client not block
    // Prometheus.
    int num_threads = 2;

    // Returns: OK; InvalidArgument naming the field and the offending value.
    absl::Status Validate() const;
  };

  // Starts serving `registries` (null entries are ignored). Returns once the port is listening.
  // Returns: InvalidArgument for bad options (malformed address, thread count);
  //          Unavailable when the address cannot be bound (port taken, address not local), with
  //            the address and civetweb's reason in the message;
  //          Internal if civetweb started but does not report its port.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Create(
      Options options, std::vector<std::shared_ptr<Registry>> registries);

  // Stops accepting, waits for requests in progress to finish, joins civetweb's threads. Blocks
  // for milliseconds (a request in progress can hold it up to the 10 s request timeout).
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

  // civetweb callbacks (C linkage is not needed: they are only called through pointers).
  static int BeginRequest(mg_connection* conn);
  static int LogMessage(const mg_connection* conn, const char* message);
  static int LogAccess(const mg_connection* conn, const char* message);

  int HandleRequest(mg_connection* conn) const;
  void OnCivetwebMessage(const char* message) ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<Registry>> registries_ ABSL_GUARDED_BY(mu_);
  bool starting_ ABSL_GUARDED_BY(mu_) = true;
  std::vector<std::string> startup_messages_ ABSL_GUARDED_BY(mu_);

  mg_context* context_ = nullptr;  // set once by Start(); civetweb's own synchronization
  int port_ = 0;
  std::string address_;
  std::string wake_host_;  // where the destructor connects to wake civetweb's master thread
};

}  // namespace zf::metrics
