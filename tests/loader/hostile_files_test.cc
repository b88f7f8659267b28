// The loader against files that are not what their names say (issue 12):
// FIFOs, devices, symlink loops, directories, huge and empty files, names
// that are not UTF-8, libraries for another machine or of another kind. Each
// one is skipped with a reason that says what the file is, promptly (a FIFO
// must not block, /dev/zero must not be read to the end), and the real cpu
// plugin beside it keeps working.
#include <elf.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "core/loader/elf.h"
#include "loader_test_util.h"

namespace oar::loader_test {
namespace {

using ::testing::HasSubstr;

// Whether |text| is valid UTF-8: what a JSON writer needs of every record.
bool is_utf8(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t length = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (length == 0 || i + length > text.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    }
    i += length;
  }
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A copy of the good C test plugin with its ELF header changed by |patch|.
std::string patched_plugin(const ScratchDir& scratch, const std::string& name,
                           const std::function<void(std::string&)>& patch) {
  std::string bytes = read_file(built_plugin("c_good"));
  patch(bytes);
  std::string path = (scratch.path() / name).string();
  write_file(path, bytes);
  return path;
}

void set_u16(std::string& bytes, size_t at, uint16_t value) {
  bytes[at] = char(value & 0xFF);  // the test plugin is little-endian, like its host
  bytes[at + 1] = char(value >> 8);
}

// A machine that is not this one.
uint16_t other_machine() {
  return loader::host_elf_header().machine == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;
}
const char* other_machine_name() {
  return other_machine() == EM_AARCH64 ? "built for aarch64" : "built for x86-64";
}

// A manifest in |scratch| naming |library| for plugin |name|.
std::string manifest_for(const ScratchDir& scratch, const std::string& file,
                         const std::string& name, const std::string& library) {
  return scratch.write(file, manifest_text(plugin_fields(name, library)));
}

struct Hostile {
  std::string fact;
  // Makes the file(s) in |scratch|; returns the path the runtime is given.
  std::function<std::string(const ScratchDir& scratch)> make;
  oar_status_t code;
  std::vector<std::string> words;
};

void PrintTo(const Hostile& hostile, std::ostream* out) { *out << hostile.fact; }

const std::vector<Hostile>& hostile_files() {
  static const std::vector<Hostile> all = {
      {"FifoManifestIsRefusedWithoutBlocking",
       [](const ScratchDir& s) {
         std::string path = (s.path() / "fifo.json").string();
         EXPECT_EQ(mkfifo(path.c_str(), 0600), 0);
         return path;
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"manifest", "fifo.json is a FIFO (named pipe), not a regular file"}},
      {"FifoLibraryIsRefusedWithoutBlocking",
       [](const ScratchDir& s) {
         std::string fifo = (s.path() / "liboar_plugin_fifo.so").string();
         EXPECT_EQ(mkfifo(fifo.c_str(), 0600), 0);
         return manifest_for(s, "fifo.json", "fifo", fifo);
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"library file", "liboar_plugin_fifo.so is a FIFO (named pipe)"}},
      {"SymlinkToDevZeroManifestIsNotReadToTheEnd",
       [](const ScratchDir& s) {
         std::string path = (s.path() / "zero.json").string();
         EXPECT_EQ(symlink("/dev/zero", path.c_str()), 0);
         return path;
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"zero.json is a character device, not a regular file"}},
      {"SymlinkToDevZeroLibraryIsRefused",
       [](const ScratchDir& s) {
         std::string library = (s.path() / "liboar_plugin_zero.so").string();
         EXPECT_EQ(symlink("/dev/zero", library.c_str()), 0);
         return manifest_for(s, "zero.json", "zero", library);
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"liboar_plugin_zero.so is a character device"}},
      {"DevNullAsManifestIsADeviceNotAnEmptyFile",
       [](const ScratchDir&) { return std::string("/dev/null"); },
       OAR_STATUS_INVALID_ARGUMENT,
       {"/dev/null is a character device"}},
      {"SymlinkLoopManifestIsCalledALoop",
       [](const ScratchDir& s) {
         std::string a = (s.path() / "a.json").string();
         std::string b = (s.path() / "b.json").string();
         EXPECT_EQ(symlink(b.c_str(), a.c_str()), 0);
         EXPECT_EQ(symlink(a.c_str(), b.c_str()), 0);
         return a;
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"a.json: a symlink loop"}},
      {"SymlinkLoopLibraryIsCalledALoopNotMissing",
       [](const ScratchDir& s) {
         std::string a = (s.path() / "liboar_plugin_a.so").string();
         std::string b = (s.path() / "liboar_plugin_b.so").string();
         EXPECT_EQ(symlink(b.c_str(), a.c_str()), 0);
         EXPECT_EQ(symlink(a.c_str(), b.c_str()), 0);
         return manifest_for(s, "loop.json", "loop", a);
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"liboar_plugin_a.so: a symlink loop"}},
      {"DanglingSymlinkLibraryIsMissing",
       [](const ScratchDir& s) {
         std::string library = (s.path() / "liboar_plugin_gone.so").string();
         EXPECT_EQ(symlink((s.path() / "nothing_here.so").c_str(), library.c_str()), 0);
         return manifest_for(s, "gone.json", "gone", library);
       },
       OAR_STATUS_NOT_FOUND,
       {"library file missing", "liboar_plugin_gone.so"}},
      {"DirectoryNamedLikeAManifestIsADirectoryNotAnEmptyFile",
       [](const ScratchDir& s) {
         std::string path = (s.path() / "x.json").string();
         EXPECT_EQ(mkdir(path.c_str(), 0700), 0);
         return path;
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"x.json is a directory, not a regular file"}},
      {"DirectoryAsLibraryIsADirectory",
       [](const ScratchDir& s) {
         std::string library = (s.path() / "liboar_plugin_dir.so").string();
         EXPECT_EQ(mkdir(library.c_str(), 0700), 0);
         return manifest_for(s, "dir.json", "dir", library);
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"liboar_plugin_dir.so is a directory"}},
      {"HugeManifestIsRefusedUnread",
       [](const ScratchDir& s) {
         // Sparse: 8 GiB that take no disk, and would take 8 GiB of memory to read.
         std::string path = (s.path() / "huge.json").string();
         int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0600);
         EXPECT_GE(fd, 0);
         EXPECT_EQ(ftruncate(fd, off_t(8) << 30), 0);
         close(fd);
         return path;
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"huge.json is 8589934592 bytes, more than the 1048576 bytes a manifest may have"}},
      {"ByteThatIsNotUtf8InAManifestIsQuotedEscaped",
       [](const ScratchDir& s) {
         return s.write("latin1.json",
                        "{\"file_format_version\": \"1.0.0\", \"plugin\": "
                        "{\"name\": \"caf\xE9\"}}");
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"not valid JSON", "caf\\xE9"}},
      {"LibraryForAnotherMachineSaysWhichMachine",
       [](const ScratchDir& s) {
         std::string library = patched_plugin(s, "liboar_plugin_foreign.so", [](std::string& b) {
           set_u16(b, 18, other_machine());
         });
         return manifest_for(s, "foreign.json", "foreign", library);
       },
       OAR_STATUS_FAILED_PRECONDITION,
       {other_machine_name(), "ELF 64-bit LSB shared library for", "this process is 64-bit LSB"}},
      {"ThirtyTwoBitLibrarySaysSo",
       [](const ScratchDir& s) {
         std::string library = patched_plugin(s, "liboar_plugin_i386.so", [](std::string& b) {
           b[EI_CLASS] = ELFCLASS32;
           set_u16(b, 18, EM_386);
         });
         return manifest_for(s, "i386.json", "i386", library);
       },
       OAR_STATUS_FAILED_PRECONDITION,
       {"built for x86 (i386)", "ELF 32-bit LSB shared library"}},
      {"ExecutableIsNotASharedLibrary",
       [](const ScratchDir& s) {
         std::string library = patched_plugin(s, "liboar_plugin_exec.so",
                                              [](std::string& b) { set_u16(b, 16, ET_EXEC); });
         return manifest_for(s, "exec.json", "exec", library);
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"not a shared library but an executable"}},
      {"TruncatedElfIsNotASharedLibrary",
       [](const ScratchDir& s) {
         std::string library = (s.path() / "liboar_plugin_cut.so").string();
         write_file(library, read_file(built_plugin("c_good")).substr(0, 12));
         return manifest_for(s, "cut.json", "cut", library);
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"not a shared library", "a truncated ELF file"}},
      {"EmptyLibraryFileIsNotASharedLibrary",
       [](const ScratchDir& s) {
         std::string library = s.write("liboar_plugin_empty.so", "");
         return manifest_for(s, "empty.json", "empty", library);
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"not a shared library", "an empty file"}},
      {"StaticArchiveIsNotASharedLibrary",
       [](const ScratchDir& s) {
         std::string library = s.write("liboar_plugin_static.so", "!<arch>\nsome.o/ ...");
         return manifest_for(s, "static.json", "static", library);
       },
       OAR_STATUS_INVALID_ARGUMENT,
       {"an ar archive (a static library, .a)"}},
  };
  return all;
}

class HostileFile : public ::testing::TestWithParam<Hostile> {
 protected:
  ScratchDir scratch_;
};

TEST_P(HostileFile, IsSkippedSayingWhatItIsWhileCpuWorks) {
  const Hostile& hostile = GetParam();
  std::string path = hostile.make(scratch_);
  Runtime runtime(only({kCpuManifest, path}));

  ASSERT_EQ(runtime.plugins().size(), 2u);
  const PluginRecord* record = record_for(runtime, path);
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->state, PluginState::kSkipped);
  EXPECT_EQ(record->code, hostile.code) << status_name(record->code) << ": " << record->reason;
  for (const std::string& word : hostile.words) EXPECT_THAT(record->reason, HasSubstr(word));
  EXPECT_TRUE(is_utf8(record->reason)) << record->reason;
  expect_cpu_works(runtime);
}

INSTANTIATE_TEST_SUITE_P(LoaderHostileFiles, HostileFile, ::testing::ValuesIn(hostile_files()),
                         [](const ::testing::TestParamInfo<Hostile>& info) {
                           return info.param.fact;
                         });

// Runs the test body with the working directory set to |dir|.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const fs::path& dir) : saved_(fs::current_path()) {
    fs::current_path(dir);
  }
  ~WorkingDirectory() { fs::current_path(saved_); }

 private:
  fs::path saved_;
};

// Issue 12, item 10: a manifest found through OAR_PLUGIN_PATH=. with a
// relative library_path was normalized to a bare file name, and dlopen then
// searched the system's library paths: here it would load the system's libm
// instead of the plugin copied beside the manifest under that name.
TEST(LoaderHostileFiles, RelativeLibraryPathLoadsTheFileBesideTheManifest) {
  ScopedEnvironment environment;
  ScratchDir scratch;
  fs::copy_file(built_plugin("c_good"), scratch.path() / "libm.so.6");
  scratch.write("c_good.json", manifest_text(plugin_fields("c_good", "libm.so.6")));
  WorkingDirectory in(scratch.path());
  environment.set("OAR_PLUGIN_PATH", ".");
  Runtime runtime(with_environment({}));

  ASSERT_EQ(runtime.plugins().size(), 1u);
  const PluginRecord& record = runtime.plugins()[0];
  EXPECT_EQ(record.state, PluginState::kLoaded) << record.reason;
  EXPECT_EQ(record.name, "c_good");
  EXPECT_EQ(record.library_path, (fs::canonical(scratch.path()) / "libm.so.6").string());
}

TEST(LoaderHostileFiles, LibraryNamedRelativelyIsOpenedFromTheWorkingDirectory) {
  ScratchDir scratch;
  fs::copy_file(built_plugin("c_good"), scratch.path() / "libm.so.6");
  WorkingDirectory in(scratch.path());
  Runtime runtime(only({"libm.so.6"}));

  ASSERT_EQ(runtime.plugins().size(), 1u);
  EXPECT_EQ(runtime.plugins()[0].state, PluginState::kLoaded) << runtime.plugins()[0].reason;
  EXPECT_EQ(runtime.plugins()[0].library_path,
            (fs::canonical(scratch.path()) / "libm.so.6").string());
}

// Names that are not UTF-8 load like any other (a manifest's own text must
// be UTF-8, its file name need not), and the reasons the loader writes about
// them are still valid UTF-8.
TEST(LoaderHostileFiles, FileNamesThatAreNotUtf8LoadAndReasonsStayUtf8) {
  ScratchDir scratch;
  std::string library = (scratch.path() / "liboar_plugin_\xFF\xFE.so").string();
  fs::copy_file(built_plugin("c_good"), library);
  std::string manifest =
      scratch.write("caf\xE9.json", manifest_text(plugin_fields("c_good", built_plugin("c_good"))));
  std::string broken =
      scratch.write("\xE9t\xE9.json", manifest_text(plugin_fields("ghost", "no.so")));
  Runtime runtime(only({manifest, library, broken}));

  ASSERT_EQ(runtime.plugins().size(), 3u);
  const PluginRecord* good = record_for(runtime, manifest);
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->state, PluginState::kLoaded) << good->reason;
  const PluginRecord* direct = record_for(runtime, library);
  ASSERT_NE(direct, nullptr);
  EXPECT_EQ(direct->state, PluginState::kSkipped) << "the same plugin, already loaded";
  EXPECT_EQ(direct->code, OAR_STATUS_ALREADY_EXISTS) << direct->reason;
  EXPECT_THAT(direct->reason, HasSubstr("liboar_plugin_\\xFF\\xFE.so"));
  EXPECT_TRUE(is_utf8(direct->reason)) << direct->reason;
  const PluginRecord* bad = record_for(runtime, broken);
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->state, PluginState::kSkipped);
  EXPECT_THAT(bad->reason, HasSubstr("library file missing"));
  EXPECT_TRUE(is_utf8(bad->reason)) << bad->reason;
}

// A folder on the search path holding a directory named like a manifest, a
// FIFO, a symlink loop and a link to /dev/zero: each is reported, none blocks
// the search, and the real manifest in the same folder loads.
TEST(LoaderHostileFiles, SearchedFolderWithHostileEntriesStillLoadsItsGoodManifest) {
  ScopedEnvironment environment;
  ScratchDir scratch;
  ASSERT_EQ(mkdir((scratch.path() / "a_dir.json").c_str(), 0700), 0);
  ASSERT_EQ(mkfifo((scratch.path() / "b_fifo.json").c_str(), 0600), 0);
  ASSERT_EQ(symlink("c_loop.json", (scratch.path() / "c_loop.json").c_str()), 0);
  ASSERT_EQ(symlink("/dev/zero", (scratch.path() / "d_zero.json").c_str()), 0);
  scratch.write("e_cpu.json", manifest_text(plugin_fields("cpu", kCpuLibrary)));
  environment.set("OAR_PLUGIN_PATH", scratch.path().string());
  Runtime runtime(with_environment({}));

  ASSERT_EQ(runtime.plugins().size(), 5u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(runtime.plugins()[i].state, PluginState::kSkipped);
    EXPECT_EQ(runtime.plugins()[i].code, OAR_STATUS_INVALID_ARGUMENT)
        << runtime.plugins()[i].reason;
  }
  expect_cpu_works(runtime, (scratch.path() / "e_cpu.json").string());
}

}  // namespace
}  // namespace oar::loader_test
