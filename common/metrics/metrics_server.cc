#include "common/metrics/metrics_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "common/metrics/text_serializer.h"
#include "common/status_macros.h"

namespace zf::metrics {
namespace {

constexpr int kMaxThreads = 64;
// A client that sends (or reads) nothing for this long loses its worker thread.
constexpr std::chrono::seconds kIoTimeout{10};

constexpr char kIndexPage[] =
    "<!DOCTYPE html>\n"
    "<html><head><title>zerofleet metrics</title></head>\n"
    "<body><h1>zerofleet metrics</h1>\n"
    "<p>Prometheus metrics are at <a href=\"/metrics\">/metrics</a>.</p></body></html>\n";
constexpr char kNotFound[] = "404 not found: metrics are served at /metrics\n";
constexpr char kMethodNotAllowed[] = "405 method not allowed: use GET or HEAD\n";

struct ListenAddress {
  std::string host;  // IPv4 literal
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
    return absl::InvalidArgumentError(
        absl::StrCat("listen_address \"", address, "\": IPv6 is not supported"));
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

// Why `host:port` cannot be bound: bind()'s strerror, found by a throwaway socket set up the way
// cpp-httplib sets up its own (SO_REUSEADDR), since cpp-httplib only reports failure.
std::string BindFailureReason(const ListenAddress& listen) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::StrCat("socket: ", ::strerror(errno));
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(listen.port));
  std::string reason = "cannot bind";
  if (inet_pton(AF_INET, listen.host.c_str(), &address.sin_addr) == 1 &&
      ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    reason = ::strerror(errno);  // e.g. "Address already in use"
  } else if (::listen(fd, 1) != 0) {
    reason = ::strerror(errno);
  }
  ::close(fd);
  return reason;
}

void SetResponse(httplib::Response& response, int status, absl::string_view body,
                 const char* content_type) {
  response.status = status;
  response.set_header("Cache-Control", "no-store");
  response.set_content(std::string(body), content_type);
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
  // cpp-httplib's send() does not pass MSG_NOSIGNAL: a client closing early must not kill us.
  ::signal(SIGPIPE, SIG_IGN);

  http_ = std::make_unique<httplib::Server>();
  const size_t num_threads = static_cast<size_t>(options.num_threads);
  // std::thread workers get the default stack size (see the header: why not civetweb).
  http_->new_task_queue = [num_threads] { return new httplib::ThreadPool(num_threads); };
  http_->set_read_timeout(kIoTimeout);
  http_->set_write_timeout(kIoTimeout);
  http_->set_keep_alive_max_count(1);  // one request per connection: idle clients hold no worker
  http_->set_address_family(AF_INET);
  // cpp-httplib's default also sets SO_REUSEPORT, which would let a second server bind a port
  // that is already served; keep only SO_REUSEADDR (restart without waiting out TIME_WAIT).
  http_->set_socket_options([](int sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  constexpr char kText[] = "text/plain; charset=utf-8";
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    // HEAD is routed here too; cpp-httplib then sends the headers only.
    SetResponse(response, 200, Scrape(), kTextContentType);
  });
  http_->Get("/", [](const httplib::Request&, httplib::Response& response) {
    SetResponse(response, 200, kIndexPage, "text/html; charset=utf-8");
  });
  const auto not_allowed = [kText](const httplib::Request&, httplib::Response& response) {
    SetResponse(response, 405, kMethodNotAllowed, kText);
    response.set_header("Allow", "GET, HEAD");
  };
  for (const char* path : {"/metrics", "/"}) {
    http_->Post(path, not_allowed);
    http_->Put(path, not_allowed);
    http_->Patch(path, not_allowed);
    http_->Delete(path, not_allowed);
    http_->Options(path, not_allowed);
  }
  http_->set_error_handler([kText](const httplib::Request&, httplib::Response& response) {
    if (response.status == 404) SetResponse(response, 404, kNotFound, kText);
  });
  http_->set_exception_handler(
      [kText](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
        SetResponse(response, 500, "500 internal error\n", kText);
      });

  if (listen.port == 0) {
    port_ = http_->bind_to_any_port(listen.host);  // getsockname() after bind: the real port
  } else {
    port_ = http_->bind_to_port(listen.host, listen.port) ? listen.port : -1;
  }
  if (port_ <= 0) {
    port_ = 0;
    http_.reset();
    return absl::UnavailableError(absl::StrCat("metrics server cannot listen on ",
                                               options.listen_address, ": ",
                                               BindFailureReason(listen)));
  }
  address_ = absl::StrCat(listen.host, ":", port_);
  listener_done_ = std::make_unique<absl::Notification>();
  listener_ = std::make_unique<Thread>("metrics-http", [this] {
    http_->listen_after_bind();
    listener_done_->Notify();
  });
  return absl::OkStatus();
}

MetricsServer::~MetricsServer() {
  if (listener_ == nullptr) return;
  // stop() only acts once the listener thread has entered its accept loop (microseconds after
  // Start); wait for that, then stop once. listen_after_bind() then joins the worker threads.
  while (!http_->is_running() &&
         !listener_done_->WaitForNotificationWithTimeout(absl::Milliseconds(1))) {
  }
  if (!listener_done_->HasBeenNotified()) http_->stop();
  listener_->Join();
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

}  // namespace zf::metrics
