#include "inference_server/plane_bits.h"

#include <array>
#include <bit>
#include <cstring>

namespace zf::inference {
namespace {

static_assert(std::endian::native == std::endian::little);

// Byte b spread over eight bytes: byte k of the result is bit k of b.
constexpr std::array<uint64_t, 256> MakeSpreadTable() {
  std::array<uint64_t, 256> table{};
  for (int b = 0; b < 256; ++b) {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v |= static_cast<uint64_t>((b >> k) & 1) << (8 * k);
    table[b] = v;
  }
  return table;
}
constexpr std::array<uint64_t, 256> kSpread = MakeSpreadTable();

// Eight bytes, each 0 or 1, gathered into one byte (byte k's value into bit k): the multiply
// moves byte k's bit 8k to bit 56 + k, and no two partial products meet below bit 64.
inline uint8_t Gather8(uint64_t bytes) {
  return static_cast<uint8_t>((bytes * 0x0102040810204080ULL) >> 56);
}

}  // namespace

bool PackPlaneBits(std::span<const uint8_t> planes, int64_t plane_size, std::string* out) {
  if (plane_size <= 0 || planes.size() % static_cast<size_t>(plane_size) != 0) return false;
  const int64_t positions = static_cast<int64_t>(planes.size()) / plane_size;
  const int64_t packed = PackedPlaneBytes(plane_size);
  out->resize(static_cast<size_t>(positions * packed));
  char* dst = out->data();
  const uint8_t* src = planes.data();
  uint64_t above_one = 0;  // any bit other than bit 0 of a byte set: a value above 1
  for (int64_t p = 0; p < positions; ++p) {
    int64_t i = 0;
    for (; i + 8 <= plane_size; i += 8) {
      uint64_t bytes;
      std::memcpy(&bytes, src + i, 8);
      above_one |= bytes & 0xFEFEFEFEFEFEFEFEULL;
      *dst++ = static_cast<char>(Gather8(bytes));
    }
    if (i < plane_size) {
      uint64_t bytes = 0;
      std::memcpy(&bytes, src + i, static_cast<size_t>(plane_size - i));
      above_one |= bytes & 0xFEFEFEFEFEFEFEFEULL;
      *dst++ = static_cast<char>(Gather8(bytes));
    }
    src += plane_size;
  }
  return above_one == 0;
}

void UnpackPlaneBits(const char* bits, int64_t positions, int64_t plane_size, uint8_t* out) {
  const auto* src = reinterpret_cast<const uint8_t*>(bits);
  for (int64_t p = 0; p < positions; ++p) {
    int64_t i = 0;
    for (; i + 8 <= plane_size; i += 8) std::memcpy(out + i, &kSpread[*src++], 8);
    if (i < plane_size) {
      const uint64_t spread = kSpread[*src++];
      std::memcpy(out + i, &spread, static_cast<size_t>(plane_size - i));
    }
    out += plane_size;
  }
}

}  // namespace zf::inference
