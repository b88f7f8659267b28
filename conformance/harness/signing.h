// Hashes and signatures for reports and bundles, through OpenSSL's libcrypto:
// SHA-256, and Ed25519 keys stored as PEM (PKCS#8 private key,
// SubjectPublicKeyInfo public key) that `openssl pkey` also reads.
#pragma once

#include <string>

namespace oar::conformance {

// Lowercase hex SHA-256 of |data|.
std::string sha256_hex(const std::string& data);
// Lowercase hex SHA-256 of the file at |path|; throws std::runtime_error
// naming the file when it cannot be read.
std::string sha256_file_hex(const std::string& path);

// Writes a new Ed25519 key pair: the private key to |private_path| (mode
// 0600, refused when the file exists) and the public key to |public_path|.
// Throws std::runtime_error naming the file that could not be written.
void generate_signing_key(const std::string& private_path, const std::string& public_path);

// An Ed25519 private key read from a PEM file.
class SigningKey {
 public:
  // Throws std::runtime_error when |path| is missing, unreadable or not an
  // Ed25519 private key.
  explicit SigningKey(const std::string& path);
  ~SigningKey();
  SigningKey(const SigningKey&) = delete;
  SigningKey& operator=(const SigningKey&) = delete;

  // The 64-byte signature of |message|, base64-encoded.
  std::string sign(const std::string& message) const;
  // The public half as PEM text.
  std::string public_key_pem() const;

 private:
  void* key_;  // EVP_PKEY
};

// The SHA-256 of the raw 32-byte Ed25519 public key in |pem|, in hex: what a
// person compares to recognise a key. Throws std::runtime_error when |pem| is
// not an Ed25519 public key.
std::string public_key_fingerprint(const std::string& pem);

// Whether |signature_base64| is the Ed25519 signature of |message| by the
// public key |public_pem|. Throws std::runtime_error when the key is not an
// Ed25519 public key; a malformed signature is simply not valid.
bool verify_signature(const std::string& public_pem, const std::string& message,
                      const std::string& signature_base64);

}  // namespace oar::conformance
