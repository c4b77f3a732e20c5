// A minimal blocking HTTP/1.1 GET client on POSIX sockets, for tests that talk to our HTTP
// endpoints (the /metrics server) without pulling in an HTTP client library.
//
//   ASSERT_OK_AND_ASSIGN(HttpResponse response,
//                        HttpGet("127.0.0.1", server->port(), "/metrics", absl::Seconds(10)));
//   EXPECT_EQ(response.status_code, 200);
//   EXPECT_EQ(response.Header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
//
// It sends "Connection: close", reads the whole response, and decodes a chunked body. No TLS, no
// redirects, no keep-alive. Thread-safe (no shared state). Tests only.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace zf::testing {

struct HttpResponse {
  int status_code = 0;  // e.g. 200
  std::string reason;   // e.g. "OK"
  // Header names lower-cased; a repeated header's values are joined with ", ".
  std::map<std::string, std::string> headers;
  std::string body;  // de-chunked

  // Returns the value of header `name` (any case), or "" if absent.
  std::string Header(absl::string_view name) const;
};

// Connects to host:port (a name or an IPv4/IPv6 literal), sends `GET path`, and reads the response.
// Blocks until the response is complete or `timeout` has passed since the call.
// Returns: the response, whatever its status code;
//          InvalidArgument for a port outside 1..65535 or a path not starting with "/";
//          Unavailable when the host does not resolve or the connection is refused or reset;
//          DeadlineExceeded when `timeout` passes first;
//          DataLoss when the bytes received are not a complete HTTP/1.x response.
absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& path,
                                     absl::Duration timeout);

}  // namespace zf::testing
