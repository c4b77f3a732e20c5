// Settings every zerofleet gRPC server and client share, so both sides agree on keepalive and
// message sizes (design.md, wire principles), plus server start-up with health and reflection.
//
//   grpc::ServerBuilder builder;
//   ApplyServerSettings(WireSettings{}, &builder);
//   ... builder.RegisterService(&service);
//   ZF_ASSIGN_OR_RETURN(auto server, StartServer("127.0.0.1:0", settings, &builder, &port,
//                                                registry.get()));
//   server->GetHealthCheckService()->SetServingStatus(true);   // once ready
//
// Thread-safety: free functions; thread-safe.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc/tls.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::grpc_util {

struct WireSettings {
  // Largest message either side sends or accepts. A leaf request of 4096 Go 19x19 positions
  // with 17 planes is ~25 MB, so the default leaves room.
  int max_message_bytes = 64 << 20;
  // Client pings after this much idle time; the server allows pings this often.
  absl::Duration keepalive_time = absl::Seconds(20);
  // A ping unanswered for this long closes the connection.
  absl::Duration keepalive_timeout = absl::Seconds(10);
  // A client's channel reconnects to a server that went away after initial_reconnect_backoff,
  // then waits 1.6x longer (+-20% jitter) per failed attempt, up to max_reconnect_backoff.
  // (gRPC's defaults, 1 s and 120 s, leave a fleet idle for up to two minutes after a server
  // that was down for a while is back.)
  absl::Duration initial_reconnect_backoff = absl::Milliseconds(250);
  absl::Duration max_reconnect_backoff = absl::Seconds(5);
  // TLS / mutual TLS for servers and clients (tls.h); plaintext when empty.
  TlsSettings tls;

  // Server limits against misbehaving clients (docs/security.md, "Limits"). A message over
  // max_message_bytes fails its call with RESOURCE_EXHAUSTED; requests in flight per stream are
  // bounded by each service (the inference service stops reading a stream at its limit).
  // Streams one connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS): a
  // client opening more waits for one to end.
  int max_concurrent_streams = 128;
  // A connection that has not finished its handshake (TLS included) and sent its HTTP/2 settings
  // within this long is closed: a peer that connects and stalls holds a socket only this long.
  absl::Duration handshake_timeout = absl::Seconds(20);
  // A connection with no call open for this long is closed (GOAWAY); clients reconnect on demand.
  absl::Duration max_connection_idle = absl::Minutes(30);
  // Every connection is closed after this long (GOAWAY, then max_connection_age_grace for its
  // calls to finish); clients reconnect, which also spreads them again over a Service's replicas.
  absl::Duration max_connection_age = absl::Hours(4);
  absl::Duration max_connection_age_grace = absl::Minutes(2);
  // Memory gRPC may hold for the server's connections (messages being read or written); past it
  // gRPC stops reading from sockets until memory is freed. Must exceed max_message_bytes.
  int64_t server_memory_bytes = int64_t{2} << 30;
};

// Channel arguments for clients with `settings`.
grpc::ChannelArguments ClientChannelArguments(const WireSettings& settings = WireSettings{});

// Creates a channel to `target` ("host:port") with ClientChannelArguments and the credentials
// of settings.tls (plaintext when it names no CA).
std::shared_ptr<grpc::Channel> CreateChannel(const std::string& target,
                                             const WireSettings& settings = WireSettings{});

// Applies message-size limits and keepalive policy to `builder`, enables the default
// grpc.health.v1 service (NOT_SERVING until the caller says otherwise) and server reflection.
// Call before registering services.
void ApplyServerSettings(const WireSettings& settings, grpc::ServerBuilder* builder);

// Adds a listening port for `address` ("host:port", port 0 picks one; or "unix:PATH", a Unix
// domain socket for co-located clients, *port then nonzero) with the credentials of
// settings.tls (mutual TLS authorizes every call by role, counting denials in `registry` when it
// is not null; authorization.h), starts the server and sets *port to the bound port. The health
// service starts out NOT_SERVING. Logs a warning when a non-loopback address is served without
// TLS.
// Returns: the server; InvalidArgument for a malformed address, bad TLS settings or a
// server_memory_bytes not above max_message_bytes; Unavailable
// if it cannot bind.
absl::StatusOr<std::unique_ptr<grpc::Server>> StartServer(const std::string& address,
                                                          const WireSettings& settings,
                                                          grpc::ServerBuilder* builder, int* port,
                                                          prometheus::Registry* registry = nullptr);

// True for addresses only this host can reach: 127.0.0.0/8, localhost, [::1], unix: sockets.
bool IsLoopbackAddress(const std::string& address);

}  // namespace zf::grpc_util
