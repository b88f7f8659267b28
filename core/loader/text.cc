#include "core/loader/text.h"

#include <cstdio>

#include "core/util/status.h"

namespace oar::loader {
namespace {

// The length of the valid UTF-8 sequence at |text[at]|, or 0 if there is none
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t utf8_length(std::string_view text, size_t at) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  }
  return length;
}

void append_escaped(unsigned char c, std::string* out) {
  char escaped[5];
  std::snprintf(escaped, sizeof(escaped), "\\x%02X", c);
  out->append(escaped, 4);
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  while (at < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[at]);
    size_t length = utf8_length(text, at);
    if (length == 0 || (c < 0x20 && c != '\t') || c == 0x7F) {
      append_escaped(c, &out);
      ++at;
      continue;
    }
    out.append(text.substr(at, length));
    at += length;
  }
  return out;
}

std::string clipped(std::string_view text, size_t max_bytes) {
  std::string safe = printable(text.substr(0, max_bytes + 8));
  if (text.size() <= max_bytes && safe.size() <= max_bytes) return safe;
  size_t cut = std::min(max_bytes, safe.size());
  // Back up to the start of a character (not into an escape's middle either).
  while (cut > 0 && (static_cast<unsigned char>(safe[cut]) & 0xC0) == 0x80) --cut;
  size_t escape = safe.rfind("\\x", cut);
  if (escape != std::string::npos && escape + 4 > cut && escape < cut) cut = escape;
  return safe.substr(0, cut) + "\xE2\x80\xA6(" + std::to_string(text.size()) + " bytes)";
}

}  // namespace oar::loader
