// libFuzzer target: the actor's .zfgames files (actor/game_sink.h), read back by `zf games dump`,
// replay seeding and the spool. The bytes become a file (an in-memory one) for ReadGameFile.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "actor/game_sink.h"
#include "fuzz/memory_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const zf::fuzz::MemoryFile memory_file(data, size);
  auto file = zf::actor::ReadGameFile(memory_file.path());
  if (file.ok() && (file->valid_bytes < 0 || static_cast<size_t>(file->valid_bytes) > size)) {
    abort();
  }
  return 0;
}
