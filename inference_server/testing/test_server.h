// An InferenceServer on loopback for tests: one batcher worker, a 200 us batching delay, serving
// `backend` (a FakeBackend, usually). Records a test failure (and returns null) if it cannot
// start. Tests only.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "inference_server/backend.h"
#include "inference_server/service/inference_server.h"

namespace zf::inference {

struct TestServerOptions {
  std::string address = "127.0.0.1:0";
  std::string game = "test";
  int max_batch = 16;
  int max_request_rows = 64;
};

inline std::unique_ptr<InferenceServer> StartTestServer(std::shared_ptr<Backend> backend,
                                                        TestServerOptions test = {}) {
  InferenceServer::Options options;
  options.listen_address = test.address;
  options.backend = std::move(backend);
  options.game = test.game;
  options.batcher.max_batch = test.max_batch;
  options.batcher.max_delay = absl::Microseconds(200);
  options.batcher.max_request_rows = test.max_request_rows;
  options.batcher.num_workers = 1;
  auto server = InferenceServer::Create(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  EXPECT_OK((*server)->Serve());
  return *std::move(server);
}

}  // namespace zf::inference
