// libFuzzer target: the inference server's check of an Evaluate request's bytes: parse the
// EvaluateRequest and validate its planes against a model's shape (inference_service.h), as the
// service does before a row reaches the batcher (one byte per plane value, or DTYPE_BITS).
#include <cstddef>
#include <cstdint>

#include "inference_server/backend.h"
#include "inference_server/plane_bits.h"
#include "inference_server/service/inference_service.h"
#include "proto/zerofleet/v1/inference.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zerofleet::v1::EvaluateRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  // Connect Four's shape and a tic-tac-toe one: the same bytes against two models.
  for (const zf::inference::ModelSpec& spec :
       {zf::inference::ModelSpec{
            .input_channels = 2, .board_height = 6, .board_width = 7, .num_actions = 7},
        zf::inference::ModelSpec{
            .input_channels = 2, .board_height = 3, .board_width = 3, .num_actions = 9}}) {
    auto rows = zf::inference::ValidatePlanes(request.planes(), spec, /*max_rows=*/4096);
    if (!rows.ok()) continue;
    // What the service relies on after a successful check: whole rows, one byte per plane
    // value, or one bit (DTYPE_BITS, each row packed on its own: inference_server/plane_bits.h).
    const int64_t row_bytes = request.planes().dtype() == zerofleet::v1::DTYPE_BITS
                                  ? zf::inference::PackedPlaneBytes(spec.PlaneSize())
                                  : spec.PlaneSize();
    if (*rows < 1 || *rows > 4096 ||
        static_cast<int64_t>(request.planes().data().size()) != *rows * row_bytes) {
      abort();
    }
  }
  return 0;
}
