#include "common/testing/http_get.h"

#include <httplib.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace zf::testing {

absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& path,
                                     absl::Duration timeout) {
  if (port < 1 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("port ", port, " is not in 1..65535"));
  }
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("path \"", path, "\" does not start with /"));
  }
  const absl::Time deadline = absl::Now() + timeout;
  const int64_t us = std::max<int64_t>(1, absl::ToInt64Microseconds(timeout));
  httplib::Client client(host, port);
  client.set_connection_timeout(us / 1000000, us % 1000000);
  client.set_read_timeout(us / 1000000, us % 1000000);
  client.set_write_timeout(us / 1000000, us % 1000000);
  client.set_keep_alive(false);
  const std::string where = absl::StrCat("GET http://", host, ":", port, path);
  httplib::Result result = client.Get(path.c_str(), {{"Connection", "close"}});
  if (!result) {
    const httplib::Error error = result.error();
    if (error == httplib::Error::ConnectionTimeout ||
        (error == httplib::Error::Read && absl::Now() >= deadline)) {
      return absl::DeadlineExceededError(
          absl::StrCat(where, ": no response within ", absl::FormatDuration(timeout)));
    }
    return absl::UnavailableError(absl::StrCat(where, ": ", httplib::to_string(error)));
  }
  HttpResponse response;
  response.status_code = result->status;
  response.reason = result->reason;
  response.body = std::move(result->body);
  for (const auto& [name, value] : result->headers) {
    std::string& joined = response.headers[absl::AsciiStrToLower(name)];
    joined = joined.empty() ? value : absl::StrCat(joined, ", ", value);
  }
  return response;
}

std::string HttpResponse::Header(absl::string_view name) const {
  auto it = headers.find(absl::AsciiStrToLower(name));
  return it == headers.end() ? "" : it->second;
}

}  // namespace zf::testing
