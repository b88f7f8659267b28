#include "conformance/harness/signing.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

namespace oar::conformance {
namespace {

constexpr size_t kSignatureBytes = 64;  // Ed25519

// The last OpenSSL error, for messages.
std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  ERR_clear_error();
  return text;
}

struct KeyDeleter {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyDeleter>;

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

struct DigestContextDeleter {
  void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};
using DigestContextPtr = std::unique_ptr<EVP_MD_CTX, DigestContextDeleter>;

std::string to_hex(const unsigned char* data, size_t size) {
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    hex += kHex[data[i] >> 4];
    hex += kHex[data[i] & 0xf];
  }
  return hex;
}

std::string base64(const unsigned char* data, size_t size) {
  std::string text(4 * ((size + 2) / 3) + 1, '\0');
  const int length =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data()), data, int(size));
  text.resize(size_t(length));
  return text;
}

// Decodes standard base64 (surrounding whitespace allowed); false when
// malformed.
bool unbase64(std::string text, std::vector<unsigned char>& out) {
  while (!text.empty() && std::isspace(uint8_t(text.back()))) text.pop_back();
  while (!text.empty() && std::isspace(uint8_t(text.front()))) text.erase(0, 1);
  if (text.empty() || text.size() % 4 != 0) return false;
  out.assign(text.size() / 4 * 3, 0);
  const int length = EVP_DecodeBlock(
      out.data(), reinterpret_cast<const unsigned char*>(text.data()), int(text.size()));
  if (length < 0) return false;
  size_t padding = 0;
  for (size_t i = text.size(); i-- > 0 && text[i] == '=';) ++padding;
  out.resize(size_t(length) - padding);
  return true;
}

KeyPtr read_public_key(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), int(pem.size())));
  KeyPtr key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr || EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519) {
    ERR_clear_error();
    throw std::runtime_error("not an Ed25519 public key in PEM form");
  }
  return key;
}

std::string public_pem_of(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PUBKEY(bio.get(), key) != 1) {
    throw std::runtime_error("cannot encode the public key: " + openssl_error());
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, size_t(size));
}

// Writes |text| to |path| created with |mode|; refuses an existing file.
void write_new_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create {}: {}", path, strerror(errno)));
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      ::close(fd);
      throw std::runtime_error(fmt::format("cannot write {}: {}", path, strerror(saved)));
    }
    written += size_t(n);
  }
  ::close(fd);
}

}  // namespace

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256: " + openssl_error());
  }
  return to_hex(digest, length);
}

std::string sha256_file_hex(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path + " to hash it");
  DigestContextPtr context(EVP_MD_CTX_new());
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256: " + openssl_error());
  }
  std::vector<char> chunk(1 << 16);
  while (file) {
    file.read(chunk.data(), std::streamsize(chunk.size()));
    if (file.gcount() > 0) EVP_DigestUpdate(context.get(), chunk.data(), size_t(file.gcount()));
  }
  if (file.bad()) throw std::runtime_error("cannot read " + path + " to hash it");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context.get(), digest, &length);
  return to_hex(digest, length);
}

void generate_signing_key(const std::string& private_path, const std::string& public_path) {
  KeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (key == nullptr) throw std::runtime_error("Ed25519 key generation: " + openssl_error());
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    throw std::runtime_error("cannot encode the private key: " + openssl_error());
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  write_new_file(private_path, std::string(data, size_t(size)), 0600);
  write_new_file(public_path, public_pem_of(key.get()), 0644);
}

SigningKey::SigningKey(const std::string& path) : key_(nullptr) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) {
    throw std::runtime_error(
        fmt::format("cannot read the signing key {}: {}", path, strerror(errno)));
  }
  EVP_PKEY* key = PEM_read_PrivateKey(file, nullptr, nullptr, nullptr);
  std::fclose(file);
  if (key == nullptr || EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
    EVP_PKEY_free(key);
    ERR_clear_error();
    throw std::runtime_error(path + " is not an Ed25519 private key in PEM form");
  }
  key_ = key;
}

SigningKey::~SigningKey() { EVP_PKEY_free(static_cast<EVP_PKEY*>(key_)); }

std::string SigningKey::sign(const std::string& message) const {
  DigestContextPtr context(EVP_MD_CTX_new());
  unsigned char signature[kSignatureBytes];
  size_t length = sizeof(signature);
  if (!context ||
      EVP_DigestSignInit(context.get(), nullptr, nullptr, nullptr, static_cast<EVP_PKEY*>(key_)) !=
          1 ||
      EVP_DigestSign(context.get(), signature, &length,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    throw std::runtime_error("Ed25519 signing: " + openssl_error());
  }
  return base64(signature, length);
}

std::string SigningKey::public_key_pem() const {
  return public_pem_of(static_cast<EVP_PKEY*>(key_));
}

std::string public_key_fingerprint(const std::string& pem) {
  KeyPtr key = read_public_key(pem);
  unsigned char raw[32];
  size_t length = sizeof(raw);
  if (EVP_PKEY_get_raw_public_key(key.get(), raw, &length) != 1) {
    throw std::runtime_error("cannot read the raw public key: " + openssl_error());
  }
  return sha256_hex(std::string(reinterpret_cast<const char*>(raw), length));
}

bool verify_signature(const std::string& public_pem, const std::string& message,
                      const std::string& signature_base64) {
  KeyPtr key = read_public_key(public_pem);
  std::vector<unsigned char> signature;
  if (!unbase64(signature_base64, signature) || signature.size() != kSignatureBytes) return false;
  DigestContextPtr context(EVP_MD_CTX_new());
  if (!context || EVP_DigestVerifyInit(context.get(), nullptr, nullptr, nullptr, key.get()) != 1) {
    throw std::runtime_error("Ed25519 verification: " + openssl_error());
  }
  const int valid =
      EVP_DigestVerify(context.get(), signature.data(), signature.size(),
                       reinterpret_cast<const unsigned char*>(message.data()), message.size());
  ERR_clear_error();
  return valid == 1;
}

}  // namespace oar::conformance
