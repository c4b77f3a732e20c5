// Board planes packed eight to a byte on the wire (zerofleet.v1.DTYPE_BITS).
//
// Planes are uint8 values, each 0 or 1 for every game here (games/game.h): a Go 19x19 position
// is 6,498 bytes as DTYPE_UINT8 and 813 as DTYPE_BITS. Every byte the server receives is copied
// by the kernel, by protobuf into the request and by the batcher into the batch, so eight times
// fewer bytes is most of the host path for large boards (docs/benchmarks.md, "The server's host
// path").
//
// Layout: each position is packed on its own into PackedPlaneBytes(plane_size) bytes, so
// positions start on byte boundaries; value i of a position is bit (i % 8) of byte i / 8, least
// significant bit first; the unused high bits of a position's last byte are zero when packed and
// ignored when unpacked.
//
// Thread-safety: pure functions.
#ifndef ZEROFLEET_INFERENCE_SERVER_PLANE_BITS_H_
#define ZEROFLEET_INFERENCE_SERVER_PLANE_BITS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace zf::inference {

// The Evaluate stream's initial metadata by which a server says it accepts DTYPE_BITS.
inline constexpr std::string_view kPlanesMetadataKey = "zf-planes";
inline constexpr std::string_view kPlanesBits = "bits";

// Bytes of one packed position of `plane_size` values: ceil(plane_size / 8).
constexpr int64_t PackedPlaneBytes(int64_t plane_size) { return (plane_size + 7) / 8; }

// Packs `planes` (positions of `plane_size` values each, planes.size() a multiple of it) into
// `out` (replaced). Returns false, with `out` unspecified, when a value is neither 0 nor 1: such
// planes go as DTYPE_UINT8.
bool PackPlaneBits(std::span<const uint8_t> planes, int64_t plane_size, std::string* out);

// Unpacks `positions` packed positions from `bits` into `out` (positions * plane_size bytes of
// 0 or 1).
void UnpackPlaneBits(const char* bits, int64_t positions, int64_t plane_size, uint8_t* out);

}  // namespace zf::inference

#endif  // ZEROFLEET_INFERENCE_SERVER_PLANE_BITS_H_
