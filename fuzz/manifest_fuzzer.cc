// The manifest parser against any bytes: it must return a manifest or a bad
// manifest status, never throw, abort or read out of bounds, and what it
// returns must hold the parser's promises (the first fuzzer run found a
// number beyond a double's range aborting every runtime, issue 12).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/loader/manifest.h"
#include "core/loader/text.h"

namespace {

void require(bool fact) {
  if (!fact) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto manifest = oar::loader::parse_manifest(text, "/fuzz/plugins.d/fuzz.json");
  if (!manifest.ok()) {
    const std::string& message = manifest.status().message();
    require(!message.empty());
    // Every message can go into JSON and onto a terminal as it is.
    require(oar::loader::printable(message) == message);
    return 0;
  }
  const oar::loader::Manifest& m = manifest.value();
  require(!m.name.empty() && m.name.size() <= oar::loader::kMaxPluginNameBytes);
  require(oar::loader::printable(m.name) == m.name);
  require(!m.library_path.empty() && m.library_path[0] == '/');
  require(m.library_path.find('\0') == std::string::npos);
  require(m.abi_major >= 0 && m.abi_minor >= 0);
  return 0;
}
