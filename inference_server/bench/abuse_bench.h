// `zf bench abuse`: one inference server under misbehaving clients, and what its well-behaved
// clients see meanwhile (docs/security.md, "Limits").
//
// The server is a real `zf inference` process (this binary, a tiny network) on loopback. Three
// phases of `seconds` each:
//   before   W well-behaved clients (Evaluate streams, one request of R rows in flight each):
//            answers/s and p50/p99 latency.
//   during   the same clients, while abusers run at once:
//              idle streams   `streams` Evaluate streams opened and left idle, spread over
//                             connections of at most 100 streams;
//              oversized      requests one byte over the server's message limit, repeatedly
//                             (each must fail with RESOURCE_EXHAUSTED, the stream only);
//              slow           `slow_sockets` TCP connections that send half an HTTP/2 preface and
//                             stall (the server must close them: handshake timeout);
//              abandoned      streams that send a request and are cancelled without reading it,
//                             `abandoned` times.
//   after    the abusers (and the well-behaved clients) gone: seconds until the server's open
//            Evaluate streams are back to 0, and until it has closed every stalled connection.
// The server's resident memory and threads are sampled every 200 ms throughout.
//
// Fails (InternalError naming why) when a well-behaved request fails, an oversized request is
// not refused with RESOURCE_EXHAUSTED, the server dies, its memory exceeds max_rss_mib, or the
// abusers' streams are not freed within 60 s. Speeds are reported, never asserted.
// Not thread-safe: one at a time.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace zf::inference {

struct AbuseBenchOptions {
  std::string zf;  // the zf binary that runs the server
  std::string game = "tictactoe";
  int well_behaved = 4;  // W
  int rows = 8;          // R
  int streams = 1000;    // idle abusive streams
  int slow_sockets = 200;
  int abandoned = 2000;
  double seconds = 10;     // each phase
  int max_rss_mib = 1024;  // the server's bound
  // Returns: OK; InvalidArgument naming the field.
  absl::Status Validate() const;
};

struct AbuseBenchResult {
  AbuseBenchOptions options;
  std::string cpu;
  int cores = 0;
  struct Phase {
    double answers_per_sec = 0;
    double p50_ms = 0, p99_ms = 0;
    int64_t failed = 0;
  } before, during;
  int idle_streams_opened = 0;
  int64_t oversized_sent = 0, oversized_refused = 0;
  int slow_sockets_opened = 0, slow_sockets_closed_by_server = 0;
  double slow_socket_close_s = 0;  // median seconds until the server closed a slow socket
  int64_t abandoned_done = 0;
  double rss_before_mib = 0, rss_peak_mib = 0, rss_after_mib = 0;
  int threads_before = 0, threads_peak = 0, threads_after = 0;
  double kib_per_idle_stream = 0;  // (RSS with the idle streams open - before) / streams
  double open_streams_peak = 0;
  double streams_freed_s = -1;  // after everyone left, until open streams == 0 (-1: never)
};

// Runs the three phases. Blocks for about 3 x seconds plus start-up and clean-up.
// Returns: the figures; InvalidArgument (options); InternalError naming the broken promise (see
// the header comment); Unavailable if the server cannot be started.
absl::StatusOr<AbuseBenchResult> RunAbuseBench(const AbuseBenchOptions& options);

std::string FormatAbuseBenchTable(const AbuseBenchResult& result);
std::string FormatAbuseBenchJson(const AbuseBenchResult& result);

}  // namespace zf::inference
