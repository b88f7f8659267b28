// The ELF header reader that says what a plugin file is before dlopen sees
// it, against any bytes: a header or nothing, a printable description, and a
// verdict for this machine, never a read past the bytes given.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/loader/elf.h"
#include "core/loader/text.h"

namespace {

void require(bool fact) {
  if (!fact) __builtin_trap();
}

bool printable(const std::string& text) { return oar::loader::printable(text) == text; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto header = oar::loader::parse_elf_header(bytes);
  if (!header) {
    require(printable(oar::loader::describe_non_elf(bytes)));
    return 0;
  }
  require(printable(oar::loader::describe(*header)));
  auto mismatch = oar::loader::elf_mismatch(*header, oar::loader::host_elf_header());
  if (mismatch) require(printable(*mismatch));
  return 0;
}
