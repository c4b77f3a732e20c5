#include "common/metrics/metrics_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <httplib.h>
#include <link.h>
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
#include "common/metrics/exposition.h"
#include "common/status_macros.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"

namespace zf::metrics {
namespace {

constexpr int kMaxThreads = 64;
// A client that sends (or reads) nothing for this long loses its worker thread.
constexpr std::chrono::seconds kIoTimeout{10};

constexpr char kNotFound[] = "404 not found: metrics are served at /metrics\n";

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
// cpp-httplib and civetweb set up their own (SO_REUSEADDR), since both only report failure.
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

// Opens a TCP connection to host:port (an IPv4 literal) and closes it; errors are ignored.
void ConnectAndClose(const std::string& host, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) == 1) {
    ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  }
  ::close(fd);
}

void SetResponse(httplib::Response& response, int status, absl::string_view body,
                 const char* content_type) {
  response.status = status;
  response.set_header("Cache-Control", "no-store");
  response.set_content(std::string(body), content_type);
}

int AddStaticTls(dl_phdr_info* info, size_t, void* data) {
  size_t* total = static_cast<size_t*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_TLS) continue;
    const size_t align = header.p_align > 0 ? header.p_align : 1;
    *total += (header.p_memsz + align - 1) / align * align;
  }
  return 0;
}

}  // namespace

size_t ProcessStaticTlsBytes() {
  size_t total = 0;
  ::dl_iterate_phdr(AddStaticTls, &total);
  return total;
}

class MetricsServer::Collector final : public prometheus::Collectable {
 public:
  explicit Collector(const MetricsServer* server) : server_(server) {}
  // The Exposer serializes what this returns with prometheus::TextSerializer, so the HELP texts
  // are escaped here (see TextExposition in exposition.h).
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> families = CollectAll(server_->Registries());
    EscapeHelpTexts(families);
    return families;
  }

 private:
  const MetricsServer* const server_;  // outlives the Exposer that calls Collect
};

absl::Status MetricsServer::Options::Validate() const {
  ZF_RETURN_IF_ERROR(ParseListenAddress(listen_address).status());
  if (num_threads < 1 || num_threads > kMaxThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_threads is ", num_threads, "; it must be in 1..", kMaxThreads));
  }
  return absl::OkStatus();
}

MetricsServer::MetricsServer(std::vector<std::shared_ptr<prometheus::Registry>> registries)
    : registries_(std::move(registries)) {}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Create(
    Options options, std::vector<std::shared_ptr<prometheus::Registry>> registries) {
  ZF_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<MetricsServer> server(new MetricsServer(std::move(registries)));
  // Neither server passes MSG_NOSIGNAL on every send: a client closing early must not kill us.
  ::signal(SIGPIPE, SIG_IGN);
  Backend backend = options.backend;
  if (backend == Backend::kAuto) {
    backend = ProcessStaticTlsBytes() <= kExposerStaticTlsLimitBytes ? Backend::kPrometheusExposer
                                                                     : Backend::kHttplib;
  }
  server->backend_ = backend;
  if (backend == Backend::kPrometheusExposer) {
    ZF_RETURN_IF_ERROR(server->StartExposer(options));
  } else {
    ZF_RETURN_IF_ERROR(server->StartHttplib(options));
  }
  return server;
}

absl::Status MetricsServer::StartExposer(const Options& options) {
  ZF_ASSIGN_OR_RETURN(const ListenAddress listen, ParseListenAddress(options.listen_address));
  const std::string io_timeout_ms =
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(kIoTimeout).count());
  // civetweb's options: the port 0 asks the kernel (GetListeningPorts reports the real one).
  std::vector<std::string> civetweb_options = {
      "listening_ports",    absl::StrCat(listen.host, ":", listen.port),
      "num_threads",        std::to_string(options.num_threads),
      "request_timeout_ms", io_timeout_ms,
      "enable_keep_alive",  "no",
  };
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(std::move(civetweb_options));
  } catch (const std::exception& e) {
    // CivetServer says only "null context": bind failures are told apart by trying the bind.
    const std::string reason = BindFailureReason(listen);
    return absl::UnavailableError(absl::StrCat(
        "metrics server cannot listen on ", options.listen_address, ": ",
        reason != "cannot bind"
            ? reason
            : absl::StrCat("prometheus-cpp's exposer failed to start (", e.what(),
                           "; static TLS of this process: ", ProcessStaticTlsBytes(), " bytes)")));
  }
  const std::vector<int> ports = exposer_->GetListeningPorts();
  if (ports.empty() || ports[0] <= 0) {
    exposer_.reset();
    return absl::InternalError("prometheus-cpp's exposer reports no listening port");
  }
  port_ = ports[0];
  collector_ = std::make_shared<Collector>(this);
  exposer_->RegisterCollectable(collector_);
  address_ = absl::StrCat(listen.host, ":", port_);
  return absl::OkStatus();
}

absl::Status MetricsServer::StartHttplib(const Options& options) {
  ZF_ASSIGN_OR_RETURN(const ListenAddress listen, ParseListenAddress(options.listen_address));
  http_ = std::make_unique<httplib::Server>();
  const size_t num_threads = static_cast<size_t>(options.num_threads);
  // std::thread workers get the default stack size (see the header: why not civetweb here).
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
  if (exposer_ != nullptr) {
    // The Exposer's destructor stops civetweb and joins its threads. civetweb's master thread
    // sees the stop flag only when its poll() on the listening socket returns, which without a
    // connection takes SOCKET_TIMEOUT_QUANTUM (2 s): every process would exit 2 s late. A
    // connection wakes it at once, so one is made every few milliseconds until it is gone.
    absl::Notification stopped;
    const std::string host = address_.substr(0, address_.rfind(':'));
    const int port = port_;
    Thread waker("metrics-waker", [&stopped, host, port] {
      do {
        ConnectAndClose(host == "0.0.0.0" ? "127.0.0.1" : host, port);
      } while (!stopped.WaitForNotificationWithTimeout(absl::Milliseconds(5)));
    });
    exposer_.reset();  // collector_ outlives it
    stopped.Notify();
    waker.Join();
  }
  if (listener_ == nullptr) return;
  // stop() only acts once the listener thread has entered its accept loop (microseconds after
  // Start); wait for that, then stop once. listen_after_bind() then joins the worker threads.
  while (!http_->is_running() &&
         !listener_done_->WaitForNotificationWithTimeout(absl::Milliseconds(1))) {
  }
  if (!listener_done_->HasBeenNotified()) http_->stop();
  listener_->Join();
}

void MetricsServer::AddRegistry(std::shared_ptr<prometheus::Registry> registry) {
  if (registry == nullptr) return;
  absl::MutexLock lock(&mu_);
  registries_.push_back(std::move(registry));
}

std::vector<std::shared_ptr<prometheus::Registry>> MetricsServer::Registries() const {
  absl::MutexLock lock(&mu_);
  return registries_;
}

std::string MetricsServer::Scrape() const { return TextExposition(CollectAll(Registries())); }

}  // namespace zf::metrics
