// What a plugin library file is, read from its ELF header before dlopen sees
// it: the system loader reports a library built for another machine as "No
// such file or directory", which reads like a missing dependency.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oar::loader {

struct ElfHeader {
  int elf_class = 0;     // ELFCLASS32 or ELFCLASS64 (other values kept as read)
  int data = 0;          // ELFDATA2LSB or ELFDATA2MSB
  int os_abi = 0;        // EI_OSABI
  uint16_t type = 0;     // ET_DYN for a shared library
  uint16_t machine = 0;  // EM_X86_64, EM_AARCH64, ...
};

// The header at the start of |bytes|; nothing when they do not start with the
// ELF magic or are too short to hold the fields above.
std::optional<ElfHeader> parse_elf_header(std::string_view bytes);

// "ELF 64-bit LSB shared library for x86-64".
std::string describe(const ElfHeader& header);

// The header a library loadable into this process has (class, byte order and
// machine of the build); machine 0 when this build does not know its own.
ElfHeader host_elf_header();

// Why |file| cannot be loaded into this process ("built for aarch64 (ELF
// 64-bit LSB shared library for aarch64); this process is x86-64 ..."), or
// nothing when its class, byte order, machine, OS ABI and type fit.
std::optional<std::string> elf_mismatch(const ElfHeader& file, const ElfHeader& host);

// What |bytes| (the start of a file that is not ELF) look like: "an ar archive
// (a static library, .a)", "a script", or "text starting \"...\"".
std::string describe_non_elf(std::string_view bytes);

}  // namespace oar::loader
