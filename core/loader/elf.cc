#include "core/loader/elf.h"

#include <elf.h>

#include <cstring>

#include "core/loader/text.h"

namespace oar::loader {
namespace {

uint16_t read_u16(std::string_view bytes, size_t at, int data) {
  auto b0 = static_cast<unsigned char>(bytes[at]);
  auto b1 = static_cast<unsigned char>(bytes[at + 1]);
  return data == ELFDATA2MSB ? uint16_t(b0 << 8 | b1) : uint16_t(b1 << 8 | b0);
}

std::string machine_name(uint16_t machine) {
  switch (machine) {
    case EM_386:
      return "x86 (i386)";
    case EM_X86_64:
      return "x86-64";
    case EM_ARM:
      return "32-bit Arm";
    case EM_AARCH64:
      return "aarch64";
    case EM_RISCV:
      return "RISC-V";
    case EM_PPC:
      return "PowerPC";
    case EM_PPC64:
      return "PowerPC64";
    case EM_S390:
      return "IBM S/390";
    case EM_MIPS:
      return "MIPS";
    case EM_SPARCV9:
      return "SPARC V9";
    case 258:  // EM_LOONGARCH, missing from older <elf.h>
      return "LoongArch";
    case EM_IA_64:
      return "IA-64";
    case EM_NONE:
      return "no machine";
    default:
      return "machine " + std::to_string(machine);
  }
}

std::string type_name(uint16_t type) {
  switch (type) {
    case ET_DYN:
      return "shared library";
    case ET_EXEC:
      return "executable";
    case ET_REL:
      return "object file";
    case ET_CORE:
      return "core dump";
    default:
      return "file of type " + std::to_string(type);
  }
}

std::string class_name(int elf_class) {
  if (elf_class == ELFCLASS32) return "32-bit";
  if (elf_class == ELFCLASS64) return "64-bit";
  return "class-" + std::to_string(elf_class);
}

std::string data_name(int data) {
  if (data == ELFDATA2LSB) return "LSB";
  if (data == ELFDATA2MSB) return "MSB";
  return "byte-order-" + std::to_string(data);
}

std::string os_abi_name(int os_abi) {
  switch (os_abi) {
    case ELFOSABI_SYSV:
      return "System V";
    case ELFOSABI_GNU:
      return "GNU/Linux";
    case ELFOSABI_FREEBSD:
      return "FreeBSD";
    case ELFOSABI_NETBSD:
      return "NetBSD";
    case ELFOSABI_OPENBSD:
      return "OpenBSD";
    case ELFOSABI_SOLARIS:
      return "Solaris";
    default:
      return "OS ABI " + std::to_string(os_abi);
  }
}

}  // namespace

std::optional<ElfHeader> parse_elf_header(std::string_view bytes) {
  // e_type and e_machine sit at the same offsets (16, 18) in both classes.
  if (bytes.size() < 20 || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) return std::nullopt;
  ElfHeader header;
  header.elf_class = static_cast<unsigned char>(bytes[EI_CLASS]);
  header.data = static_cast<unsigned char>(bytes[EI_DATA]);
  header.os_abi = static_cast<unsigned char>(bytes[EI_OSABI]);
  header.type = read_u16(bytes, 16, header.data);
  header.machine = read_u16(bytes, 18, header.data);
  return header;
}

std::string describe(const ElfHeader& header) {
  std::string text = "ELF " + class_name(header.elf_class) + " " + data_name(header.data) + " " +
                     type_name(header.type) + " for " + machine_name(header.machine);
  if (header.os_abi != ELFOSABI_SYSV && header.os_abi != ELFOSABI_GNU) {
    text += " (" + os_abi_name(header.os_abi) + ")";
  }
  return text;
}

ElfHeader host_elf_header() {
  ElfHeader host;
  host.elf_class = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
  host.data = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? ELFDATA2MSB : ELFDATA2LSB;
  host.type = ET_DYN;
#if defined(__x86_64__)
  host.machine = EM_X86_64;
#elif defined(__i386__)
  host.machine = EM_386;
#elif defined(__aarch64__)
  host.machine = EM_AARCH64;
#elif defined(__arm__)
  host.machine = EM_ARM;
#elif defined(__riscv)
  host.machine = EM_RISCV;
#elif defined(__powerpc64__)
  host.machine = EM_PPC64;
#elif defined(__powerpc__)
  host.machine = EM_PPC;
#elif defined(__s390__)
  host.machine = EM_S390;
#elif defined(__loongarch__)
  host.machine = 258;
#elif defined(__mips__)
  host.machine = EM_MIPS;
#else
  host.machine = 0;  // unknown: the machine is not checked
#endif
  return host;
}

std::optional<std::string> elf_mismatch(const ElfHeader& file, const ElfHeader& host) {
  std::string what = describe(file);
  std::string here = "this process is " + class_name(host.elf_class) + " " + data_name(host.data) +
                     " " + machine_name(host.machine);
  if (host.machine != 0 && file.machine != host.machine) {
    return "built for " + machine_name(file.machine) + " (" + what + "); " + here +
           " (install the plugin built for this machine)";
  }
  if (file.elf_class != host.elf_class) {
    return "built as " + class_name(file.elf_class) + " code (" + what + "); " + here +
           " (install the plugin built for this machine)";
  }
  if (file.data != host.data) {
    return "built for the other byte order (" + what + "); " + here;
  }
  if (file.os_abi != ELFOSABI_SYSV && file.os_abi != ELFOSABI_GNU) {
    return "built for another operating system (" + what + ")";
  }
  if (file.type != ET_DYN) {
    return "not a shared library but " + std::string(file.type == ET_EXEC ? "an " : "a ") +
           type_name(file.type) + " (" + what + "); a plugin is built as a shared module";
  }
  return std::nullopt;
}

std::string describe_non_elf(std::string_view bytes) {
  if (bytes.empty()) return "an empty file";
  if (bytes.substr(0, 8) == "!<arch>\n") return "an ar archive (a static library, .a)";
  if (bytes.substr(0, 2) == "#!") return "a script";
  if (bytes.substr(0, 4) == ELFMAG) return "a truncated ELF file";
  if (bytes.substr(0, 4) == "\xCA\xFE\xBA\xBE" || bytes.substr(0, 4) == "\xCF\xFA\xED\xFE") {
    return "a Mach-O file (macOS)";
  }
  if (bytes.substr(0, 2) == "MZ") return "a Windows (PE) file";
  return "a file starting \"" + clipped(bytes, 24) + "\"";
}

}  // namespace oar::loader
