// TLS and mutual TLS for every zerofleet server and client, from PEM files that are reloaded when
// they change (certificate rotation without a restart). docs/security.md has the threat model.
//
// One TlsSettings per process, shared by its servers and its clients:
//   server side   cert_file + key_file          -> TLS
//                 + client_ca_file              -> mutual TLS: a client certificate signed by that
//                                                  CA is required, and each call is authorized by
//                                                  the caller's role (common/grpc/authorization.h)
//   client side   ca_file                       -> TLS, the server's certificate verified against
//                                                  that CA and the target's host name
//                 + cert_file + key_file        -> the client presents its certificate (mTLS)
// Nothing set: plaintext (the default; `zf run` on loopback).
//
// Thread-safety: free functions and a value type; thread-safe.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace zf::grpc_util {

struct TlsSettings {
  // This process's certificate (PEM, leaf first, then any intermediates) and private key.
  std::string cert_file;
  std::string key_file;
  // Client side: the CA bundle (PEM) that server certificates must chain to.
  std::string ca_file;
  // Server side: the CA bundle that client certificates must chain to. Setting it requires every
  // client to present a certificate and turns on per-role authorization.
  std::string client_ca_file;
  // Client side: the name the server's certificate must carry, when it is not the target's host
  // (for example when dialling an IP address). Empty: the target's host.
  std::string server_name;
  // How often the files are read again; a changed file takes effect for new connections.
  absl::Duration reload_interval = absl::Seconds(10);

  bool server_tls() const { return !cert_file.empty(); }
  bool mutual_tls() const { return !client_ca_file.empty(); }
  bool client_tls() const { return !ca_file.empty(); }

  // Checks that the settings make sense together and that every named file can be read and
  // holds PEM of the right kind, so a typo fails at start-up rather than at the first handshake.
  // Returns: OK; InvalidArgument naming the flag and the problem.
  absl::Status Validate() const;
};

// Credentials for a server: TLS (or mTLS) per `tls`, or insecure when !tls.server_tls().
// With mutual TLS the credentials carry the authorization processor (authorization.h), which
// counts denials in `metrics` when it is not null.
// Returns: the credentials; InvalidArgument if `tls` does not validate.
class ServerAuthorization;
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsSettings& tls, std::shared_ptr<ServerAuthorization> authorization);

// Credentials for a client: TLS (presenting cert_file when set) when tls.client_tls(), else
// insecure. Files are assumed validated (Validate()); a file that later becomes unreadable keeps
// the last good contents (gRPC logs the error).
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsSettings& tls);

}  // namespace zf::grpc_util
