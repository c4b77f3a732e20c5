#include "common/grpc/channel.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/grpc/authorization.h"
#include "common/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"

namespace zf::grpc_util {
namespace {

int Millis(absl::Duration d) { return static_cast<int>(absl::ToInt64Milliseconds(d)); }

absl::Status CheckAddress(const std::string& address) {
  // A Unix domain socket: "unix:PATH" (sun_path holds 107 bytes and a NUL).
  if (absl::StartsWith(address, "unix:")) {
    const size_t length = address.size() - 5;
    if (length == 0 || length > 107) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad listen address \"", address, "\": a unix: socket path must be 1..107 bytes"));
    }
    return absl::OkStatus();
  }
  size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad listen address \"", address, "\": expected HOST:PORT, port 0..65535"));
  }
  return absl::OkStatus();
}

}  // namespace

grpc::ChannelArguments ClientChannelArguments(const WireSettings& settings) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(settings.max_message_bytes);
  args.SetMaxSendMessageSize(settings.max_message_bytes);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, Millis(settings.keepalive_time));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Millis(settings.keepalive_timeout));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, Millis(settings.initial_reconnect_backoff));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, Millis(settings.max_reconnect_backoff));
  if (!settings.tls.server_name.empty()) args.SetSslTargetNameOverride(settings.tls.server_name);
  return args;
}

std::shared_ptr<grpc::Channel> CreateChannel(const std::string& target,
                                             const WireSettings& settings) {
  return grpc::CreateCustomChannel(target, MakeChannelCredentials(settings.tls),
                                   ClientChannelArguments(settings));
}

void ApplyServerSettings(const WireSettings& settings, grpc::ServerBuilder* builder) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  builder->SetMaxReceiveMessageSize(settings.max_message_bytes);
  builder->SetMaxSendMessageSize(settings.max_message_bytes);
  // Accept the clients' keepalive pings (a server rejecting them would close the connection).
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                              Millis(settings.keepalive_time) / 2);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // The server pings too: a client whose host vanished (partition, power loss, SIGSTOP) sends no
  // FIN, and without pings its streams and their buffers would stay open for as long as TCP
  // takes to give up (or forever on an idle stream). keepalive_timeout later, the connection is
  // closed and every stream on it is cancelled, so the handlers free what they hold.
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, Millis(settings.keepalive_time));
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Millis(settings.keepalive_timeout));
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Limits against misbehaving clients.
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, settings.max_concurrent_streams);
  builder->AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                              Millis(settings.handshake_timeout));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                              Millis(settings.max_connection_idle));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, Millis(settings.max_connection_age));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                              Millis(settings.max_connection_age_grace));
  grpc::ResourceQuota quota("zf-server");
  quota.Resize(static_cast<size_t>(settings.server_memory_bytes));
  builder->SetResourceQuota(quota);
  // gRPC sets SO_REUSEPORT by default, which lets a second server silently share a port that is
  // in use; we want that to be an error.
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

bool IsLoopbackAddress(const std::string& address) {
  if (absl::StartsWith(address, "unix:")) return true;
  std::string host = address.substr(0, address.rfind(':'));
  return host == "localhost" || host == "[::1]" || absl::StartsWith(host, "127.");
}

absl::StatusOr<std::unique_ptr<grpc::Server>> StartServer(const std::string& address,
                                                          const WireSettings& settings,
                                                          grpc::ServerBuilder* builder, int* port,
                                                          prometheus::Registry* registry) {
  absl::Status valid = CheckAddress(address);
  if (!valid.ok()) return valid;
  if (settings.server_memory_bytes <= settings.max_message_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("server memory quota (", settings.server_memory_bytes,
                     " bytes) must exceed the largest message (", settings.max_message_bytes,
                     " bytes), or one message could stall every connection"));
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = MakeServerCredentials(
      settings.tls,
      settings.tls.mutual_tls() ? std::make_shared<ServerAuthorization>(registry) : nullptr);
  if (!credentials.ok()) return credentials.status();
  if (!settings.tls.server_tls() && !IsLoopbackAddress(address)) {
    ZF_LOG(WARNING) << "serving " << address << " without TLS: anyone who can reach this port can "
                    << "call every method (give --tls_cert, --tls_key and --tls_client_ca; "
                    << "docs/security.md)";
  }
  *port = 0;
  builder->AddListeningPort(address, *credentials, port);
  std::unique_ptr<grpc::Server> server = builder->BuildAndStart();
  if (server == nullptr || *port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  }
  server->GetHealthCheckService()->SetServingStatus(false);
  return server;
}

}  // namespace zf::grpc_util
