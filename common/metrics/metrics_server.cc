#include "common/metrics/metrics_server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/base/call_once.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "common/metrics/text_serializer.h"
#include "common/status_macros.h"
#include "common/thread.h"

namespace zf::metrics {
namespace {

constexpr int kMaxThreads = 64;
// A client that sends nothing for this long loses its worker thread.
constexpr char kRequestTimeoutMs[] = "10000";

constexpr char kIndexPage[] =
    "<!DOCTYPE html>\n"
    "<html><head><title>zerofleet metrics</title></head>\n"
    "<body><h1>zerofleet metrics</h1>\n"
    "<p>Prometheus metrics are at <a href=\"/metrics\">/metrics</a>.</p></body></html>\n";
constexpr char kNotFound[] = "404 not found: metrics are served at /metrics\n";
constexpr char kMethodNotAllowed[] = "405 method not allowed: use GET or HEAD\n";

struct ListenAddress {
  std::string host;  // IPv4 literal, as civetweb's "listening_ports" wants it
  int port = 0;
};

absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen_address \"", address, "\" is not HOST:PORT"));
  }
  absl::string_view host = address.substr(0, colon);
  absl::string_view port = address.substr(colon + 1);
  if (absl::StartsWith(host, "[") || host.find(':') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "listen_address \"", address, "\": IPv6 is not supported (civetweb is built without it)"));
  }
  ListenAddress parsed;
  if (host == "localhost") {
    parsed.host = "127.0.0.1";
  } else {
    in_addr ipv4;
    if (inet_pton(AF_INET, std::string(host).c_str(), &ipv4) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("listen_address \"", address,
                       "\": host must be an IPv4 address (e.g. 0.0.0.0) or localhost"));
    }
    parsed.host = std::string(host);
  }
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return absl::ascii_isdigit(c); })) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen_address \"", address, "\": port must be a number in 0..65535"));
  }
  int value = 0;
  for (char c : port) value = value * 10 + (c - '0');
  if (value > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen_address \"", address, "\": port must be a number in 0..65535"));
  }
  parsed.port = value;
  return parsed;
}

void InitCivetwebOnce() {
  static absl::once_flag once;
  // mg_init_library is not thread-safe and must precede everything else; never undone.
  absl::call_once(once, [] { mg_init_library(0); });
}

// Sends one complete response; returns `status` for civetweb's access accounting.
int Respond(mg_connection* conn, int status, const char* content_type, absl::string_view body,
            bool head_only, const char* allow = nullptr) {
  mg_response_header_start(conn, status);
  mg_response_header_add(conn, "Content-Type", content_type, -1);
  const std::string length = absl::StrCat(body.size());
  mg_response_header_add(conn, "Content-Length", length.c_str(), -1);
  mg_response_header_add(conn, "Cache-Control", "no-store", -1);
  if (allow != nullptr) mg_response_header_add(conn, "Allow", allow, -1);
  mg_response_header_send(conn);
  if (!head_only && !body.empty()) {
    // A client that went away makes this fail; nothing to do about it.
    mg_write(conn, body.data(), body.size());
  }
  return status;
}

// Opens and at once closes a TCP connection to host:port, without blocking for long.
void KnockOnce(const std::string& host, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) == 1) {
    // Non-blocking: on loopback the handshake completes in the kernel; nothing to wait for.
    ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  }
  ::close(fd);
}

}  // namespace

absl::Status MetricsServer::Options::Validate() const {
  ZF_RETURN_IF_ERROR(ParseListenAddress(listen_address).status());
  if (num_threads < 1 || num_threads > kMaxThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_threads is ", num_threads, "; it must be in 1..", kMaxThreads));
  }
  return absl::OkStatus();
}

MetricsServer::MetricsServer(std::vector<std::shared_ptr<Registry>> registries)
    : registries_(std::move(registries)) {}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Create(
    Options options, std::vector<std::shared_ptr<Registry>> registries) {
  ZF_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<MetricsServer> server(new MetricsServer(std::move(registries)));
  ZF_RETURN_IF_ERROR(server->Start(options));
  return server;
}

absl::Status MetricsServer::Start(const Options& options) {
  ZF_ASSIGN_OR_RETURN(const ListenAddress listen, ParseListenAddress(options.listen_address));
  InitCivetwebOnce();

  const std::string ports = absl::StrCat(listen.host, ":", listen.port);
  const std::string threads = absl::StrCat(options.num_threads);
  const char* civet_options[] = {
      "listening_ports", ports.c_str(),       "num_threads", threads.c_str(), "request_timeout_ms",
      kRequestTimeoutMs, "enable_keep_alive", "no",          nullptr};
  mg_callbacks callbacks = {};
  callbacks.begin_request = &MetricsServer::BeginRequest;
  callbacks.log_message = &MetricsServer::LogMessage;
  callbacks.log_access = &MetricsServer::LogAccess;
  unsigned error_code = 0;
  char error_text[256] = {};
  mg_error_data error = {&error_code, error_text, sizeof(error_text)};
  mg_init_data init = {&callbacks, this, civet_options};
  context_ = mg_start2(&init, &error);

  std::vector<std::string> messages;
  {
    absl::MutexLock lock(&mu_);
    starting_ = false;
    messages.swap(startup_messages_);
  }
  if (context_ == nullptr) {
    // civetweb's own messages say why (e.g. "cannot bind to 127.0.0.1:9090: 98 (Address already
    // in use)"); its error text is only a summary.
    if (error_text[0] != '\0') messages.push_back(error_text);
    return absl::UnavailableError(absl::StrCat("metrics server cannot listen on ",
                                               options.listen_address, ": ",
                                               absl::StrJoin(messages, "; ")));
  }
  for (const std::string& message : messages) ZF_LOG(WARNING) << "civetweb: " << message;

  mg_server_port bound[4] = {};
  const int num_bound = mg_get_server_ports(context_, 4, bound);
  // civetweb reads the port back with getsockname() after bind, so port 0 yields the real one.
  if (num_bound < 1 || bound[0].port <= 0 || (listen.port != 0 && bound[0].port != listen.port)) {
    mg_stop(context_);
    context_ = nullptr;
    return absl::InternalError(absl::StrCat("metrics server on ", options.listen_address,
                                            ": civetweb does not report the bound port"));
  }
  port_ = bound[0].port;
  address_ = absl::StrCat(listen.host, ":", port_);
  wake_host_ = listen.host == "0.0.0.0" ? "127.0.0.1" : listen.host;
  return absl::OkStatus();
}

MetricsServer::~MetricsServer() {
  if (context_ == nullptr) return;
  // civetweb's master thread polls the listening socket with a fixed 2 s timeout and only then
  // notices mg_stop(); a connection wakes it at once. mg_stop() runs on a helper thread while this
  // one knocks every 20 ms until it returns; if knocking fails, stopping still ends within 2 s.
  absl::Notification stopped;
  Thread stopper("metrics-stop", [this, &stopped] {
    mg_stop(context_);
    stopped.Notify();
  });
  while (!stopped.WaitForNotificationWithTimeout(absl::Milliseconds(20))) {
    KnockOnce(wake_host_, port_);
  }
}

void MetricsServer::AddRegistry(std::shared_ptr<Registry> registry) {
  if (registry == nullptr) return;
  absl::MutexLock lock(&mu_);
  registries_.push_back(std::move(registry));
}

std::string MetricsServer::Scrape() const {
  std::vector<std::shared_ptr<Registry>> registries;
  {
    absl::MutexLock lock(&mu_);
    registries = registries_;
  }
  return TextSerializer().Serialize(CollectAll(registries));
}

int MetricsServer::BeginRequest(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  const auto* server = static_cast<const MetricsServer*>(info->user_data);
  return server->HandleRequest(conn);
}

int MetricsServer::HandleRequest(mg_connection* conn) const {
  const mg_request_info* info = mg_get_request_info(conn);
  const absl::string_view method = info->request_method ? info->request_method : "";
  const absl::string_view path = info->local_uri ? info->local_uri : "";
  const bool head_only = method == "HEAD";
  constexpr char kText[] = "text/plain; charset=utf-8";
  if (path != "/metrics" && path != "/") return Respond(conn, 404, kText, kNotFound, head_only);
  if (method != "GET" && !head_only) {
    return Respond(conn, 405, kText, kMethodNotAllowed, /*head_only=*/false, "GET, HEAD");
  }
  if (path == "/") return Respond(conn, 200, "text/html; charset=utf-8", kIndexPage, head_only);
  return Respond(conn, 200, kTextContentType, Scrape(), head_only);
}

int MetricsServer::LogMessage(const mg_connection* conn, const char* message) {
  const mg_context* context = conn != nullptr ? mg_get_context(conn) : nullptr;
  auto* server =
      context != nullptr ? static_cast<MetricsServer*>(mg_get_user_data(context)) : nullptr;
  if (server != nullptr) {
    server->OnCivetwebMessage(message);
  } else {
    ZF_LOG(WARNING) << "civetweb: " << message;
  }
  return 1;  // handled: civetweb writes nothing itself
}

int MetricsServer::LogAccess(const mg_connection*, const char*) { return 1; }

void MetricsServer::OnCivetwebMessage(const char* message) {
  {
    absl::MutexLock lock(&mu_);
    if (starting_) {
      startup_messages_.emplace_back(message);
      return;
    }
  }
  ZF_LOG(WARNING) << "civetweb: " << message;
}

}  // namespace zf::metrics
