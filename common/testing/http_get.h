// A blocking HTTP/1.1 GET for tests (and benchmarks) that talk to our HTTP endpoints (the
// /metrics servers): cpp-httplib's client behind a Status-returning call.
//
//   ASSERT_OK_AND_ASSIGN(HttpResponse response,
//                        HttpGet("127.0.0.1", server->port(), "/metrics", absl::Seconds(10)));
//   EXPECT_EQ(response.status_code, 200);
//   EXPECT_EQ(response.Header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
//
// It sends "Connection: close" and reads the whole response (cpp-httplib decodes a chunked or
// gzip body). No TLS, no redirects, no keep-alive. Thread-safe (no shared state).
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
// Blocks until the response is complete or `timeout` has passed (cpp-httplib applies it to the
// connect, each read and each write).
// Returns: the response, whatever its status code;
//          InvalidArgument for a port outside 1..65535 or a path not starting with "/";
//          Unavailable when the host does not resolve, the connection is refused or reset, or
//            the bytes received are not a complete HTTP/1.x response;
//          DeadlineExceeded when `timeout` passes first.
absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& path,
                                     absl::Duration timeout);

}  // namespace zf::testing
