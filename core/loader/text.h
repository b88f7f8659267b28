// Text the loader puts into messages and records: whatever bytes a file name,
// a manifest or a plugin table holds, what leaves the loader is valid UTF-8 of
// bounded length, so that a JSON writer or a terminal can take it.
#pragma once

#include <string>
#include <string_view>

#include "oar/status.h"

namespace oar::loader {

// |text| with every byte that is not part of a valid UTF-8 sequence, and every
// ASCII control character but tab, written as "\xNN".
std::string printable(std::string_view text);

// printable(|text|) cut to at most |max_bytes| bytes (at a character
// boundary) plus a note of how long it was: "abc…(1048576 bytes)".
std::string clipped(std::string_view text, size_t max_bytes);

}  // namespace oar::loader
