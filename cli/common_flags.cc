#include "cli/common_flags.h"

#include <cstdint>

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, game, "connect4",
          "game name: tictactoe, connect4, dotsboxes[:RxC] (boxes, 1..10 each), go[:N][:komi=K] "
          "(N 5..19, default 9; komi default 7.5)");
ABSL_FLAG(bool, json, false, "print one JSON object instead of text");
ABSL_FLAG(uint64_t, seed, 0, "random seed; 0 picks one from the clock");
ABSL_FLAG(std::string, listen, "0.0.0.0:7400", "HOST:PORT to serve gRPC on (port 0 picks one)");
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT for the Prometheus /metrics endpoint (empty: none; port 0 picks one)");
ABSL_FLAG(int, blocks, 4, "network shape: residual blocks");
ABSL_FLAG(int, filters, 64, "network shape: filters per convolution");
ABSL_FLAG(
    std::string, dir, "",
    "a directory: the replay shard's log (zf replay), the run directory (zf learner, zf run)");
ABSL_FLAG(std::string, replay, "", "replay shard addresses, HOST:PORT[,HOST:PORT...]");
ABSL_FLAG(std::string, device, "auto",
          "where the network runs: cpu, cuda, cuda:N or auto (CUDA when this build and machine "
          "have it)");
ABSL_FLAG(std::string, precision, "auto",
          "forward-pass arithmetic: auto (bf16 on CUDA, fp32 on the CPU), fp32, bf16, fp16");
ABSL_FLAG(bool, cuda_graphs, true, "on CUDA: replay captured CUDA graphs per batch size bucket");
