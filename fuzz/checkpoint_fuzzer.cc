// libFuzzer target: checkpoint files (model/checkpoint.h), which inference servers load from
// the model service and `zf` commands from disk. The bytes become a file (an in-memory one)
// that ReadCheckpoint and ReadManifest verify; neither may crash, whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz/memory_file.h"
#include "model/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const zf::fuzz::MemoryFile file(data, size);
  auto manifest = zf::model::ReadManifest(file.path());
  auto checkpoint = zf::model::ReadCheckpoint(file.path());
  // A file whose whole contents verify has a manifest that verifies too.
  if (checkpoint.ok() && !manifest.ok()) abort();
  return 0;
}
