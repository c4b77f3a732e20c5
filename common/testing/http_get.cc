#include "common/testing/http_get.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace zf::testing {
namespace {

constexpr size_t kMaxResponseBytes = 64 << 20;

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

std::string ErrnoText(int error) { return std::strerror(error); }

// Waits for `events` on `fd` until `deadline`. Returns: OK; DeadlineExceeded; Unavailable.
absl::Status WaitFor(int fd, short events, absl::Time deadline, absl::string_view what) {
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat("HttpGet: timed out ", what));
    }
    pollfd pfd = {fd, events, 0};
    const int timeout_ms = static_cast<int>(
        std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, std::numeric_limits<int>::max()));
    const int ready = ::poll(&pfd, 1, timeout_ms);
    if (ready > 0) return absl::OkStatus();
    if (ready < 0 && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat("HttpGet: poll: ", ErrnoText(errno)));
    }
  }
}

// Connects to one resolved address. Returns the socket fd; DeadlineExceeded; Unavailable.
absl::StatusOr<int> ConnectOne(const addrinfo& address, absl::Time deadline) {
  const int fd = ::socket(address.ai_family, address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          address.ai_protocol);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", ErrnoText(errno)));
  if (::connect(fd, address.ai_addr, address.ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS) {
    const int error = errno;
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("connect: ", ErrnoText(error)));
  }
  absl::Status ready = WaitFor(fd, POLLOUT, deadline, "connecting");
  if (!ready.ok()) {
    ::close(fd);
    return ready;
  }
  int error = 0;
  socklen_t length = sizeof(error);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
  if (error != 0) {
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("connect: ", ErrnoText(error)));
  }
  return fd;
}

// Decodes a chunked body. Returns nullopt if it is malformed or incomplete.
std::optional<std::string> Dechunk(absl::string_view data) {
  std::string body;
  while (true) {
    const size_t line_end = data.find("\r\n");
    if (line_end == absl::string_view::npos) return std::nullopt;
    absl::string_view size_text = data.substr(0, line_end);
    size_text = size_text.substr(0, size_text.find(';'));  // chunk extensions
    uint64_t size = 0;
    if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(size_text), &size)) return std::nullopt;
    data.remove_prefix(line_end + 2);
    if (size == 0) return body;  // trailers, if any, are ignored
    if (data.size() < size + 2 || data.substr(size, 2) != "\r\n") return std::nullopt;
    body.append(data.data(), size);
    data.remove_prefix(size + 2);
  }
}

// Returns the byte count of a response whose head ends at `head_end`, if it can be known before
// the connection closes (Content-Length); nullopt otherwise.
std::optional<size_t> ExpectedSize(absl::string_view head, size_t head_end) {
  for (absl::string_view line : absl::StrSplit(head, "\r\n")) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(line.substr(0, colon)),
                                "content-length")) {
      continue;
    }
    size_t length = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(colon + 1)), &length)) {
      return std::nullopt;
    }
    return head_end + length;
  }
  return std::nullopt;
}

absl::StatusOr<HttpResponse> Parse(absl::string_view raw) {
  const size_t head_size = raw.find("\r\n\r\n");
  if (head_size == absl::string_view::npos) {
    return absl::DataLossError("HttpGet: response ended before its headers did");
  }
  std::vector<absl::string_view> lines = absl::StrSplit(raw.substr(0, head_size), "\r\n");
  HttpResponse response;
  // Status line: HTTP/1.1 200 OK
  std::vector<absl::string_view> status = absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
  if (status.size() < 2 || !absl::StartsWith(status[0], "HTTP/1.") ||
      !absl::SimpleAtoi(status[1], &response.status_code)) {
    return absl::DataLossError(absl::StrCat("HttpGet: bad status line \"", lines[0], "\""));
  }
  if (status.size() == 3) response.reason = std::string(status[2]);
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) {
      return absl::DataLossError(absl::StrCat("HttpGet: bad header line \"", lines[i], "\""));
    }
    std::string name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(lines[i].substr(0, colon)));
    std::string value(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
    auto [it, inserted] = response.headers.try_emplace(name, value);
    if (!inserted) absl::StrAppend(&it->second, ", ", value);
  }
  absl::string_view body = raw.substr(head_size + 4);
  if (absl::EqualsIgnoreCase(response.Header("transfer-encoding"), "chunked")) {
    std::optional<std::string> decoded = Dechunk(body);
    if (!decoded.has_value()) return absl::DataLossError("HttpGet: bad or truncated chunked body");
    response.body = *std::move(decoded);
  } else if (const std::string length = response.Header("content-length"); !length.empty()) {
    size_t expected = 0;
    if (!absl::SimpleAtoi(length, &expected)) {
      return absl::DataLossError(absl::StrCat("HttpGet: bad Content-Length \"", length, "\""));
    }
    if (body.size() < expected) {
      return absl::DataLossError(
          absl::StrCat("HttpGet: body truncated: ", body.size(), " of ", expected, " bytes"));
    }
    response.body = std::string(body.substr(0, expected));
  } else {
    response.body = std::string(body);
  }
  return response;
}

}  // namespace

std::string HttpResponse::Header(absl::string_view name) const {
  auto it = headers.find(absl::AsciiStrToLower(name));
  return it == headers.end() ? "" : it->second;
}

absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& path,
                                     absl::Duration timeout) {
  if (port < 1 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("HttpGet: port ", port, " not in 1..65535"));
  }
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("HttpGet: path \"", path, "\" must start with /"));
  }
  const absl::Time deadline = absl::Now() + timeout;
  const std::string where = absl::StrCat(host, ":", port);

  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addresses = nullptr;
  const int resolved =
      ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &addresses);
  if (resolved != 0) {
    return absl::UnavailableError(
        absl::StrCat("HttpGet: cannot resolve ", host, ": ", gai_strerror(resolved)));
  }
  absl::StatusOr<int> connected = absl::UnavailableError("no address");
  for (addrinfo* a = addresses; a != nullptr; a = a->ai_next) {
    connected = ConnectOne(*a, deadline);
    if (connected.ok() || absl::IsDeadlineExceeded(connected.status())) break;
  }
  ::freeaddrinfo(addresses);
  if (!connected.ok()) {
    return absl::Status(connected.status().code(),
                        absl::StrCat("HttpGet ", where, ": ", connected.status().message()));
  }
  Socket socket(*connected);

  const std::string request = absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: ", where,
                                           "\r\nUser-Agent: zf-http-get\r\nAccept: */*\r\n"
                                           "Connection: close\r\n\r\n");
  size_t sent = 0;
  while (sent < request.size()) {
    absl::Status ready = WaitFor(socket.fd(), POLLOUT, deadline, "sending the request");
    if (!ready.ok()) return ready;
    const ssize_t n =
        ::send(socket.fd(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return absl::UnavailableError(absl::StrCat("HttpGet ", where, ": send: ", ErrnoText(errno)));
    }
    sent += static_cast<size_t>(n);
  }

  std::string raw;
  std::optional<size_t> expected_size;
  char buffer[16384];
  while (!expected_size.has_value() || raw.size() < *expected_size) {
    absl::Status ready = WaitFor(socket.fd(), POLLIN, deadline, "reading the response");
    if (!ready.ok()) return ready;
    const ssize_t n = ::recv(socket.fd(), buffer, sizeof(buffer), 0);
    if (n == 0) break;  // the server closed: the response is complete (or truncated)
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return absl::UnavailableError(absl::StrCat("HttpGet ", where, ": recv: ", ErrnoText(errno)));
    }
    raw.append(buffer, static_cast<size_t>(n));
    if (raw.size() > kMaxResponseBytes) {
      return absl::DataLossError(
          absl::StrCat("HttpGet ", where, ": response over ", kMaxResponseBytes, " bytes"));
    }
    if (!expected_size.has_value()) {
      const size_t head_end = raw.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        expected_size = ExpectedSize(absl::string_view(raw).substr(0, head_end), head_end + 4);
        // Without Content-Length we read until the server closes (we asked it to).
        if (!expected_size.has_value()) expected_size = kMaxResponseBytes + 1;
      }
    }
  }
  return Parse(raw);
}

}  // namespace zf::testing
