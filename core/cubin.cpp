#include "core/cubin.hpp"

#include <cstdint>

namespace tuned {

std::string cubin_checksum(const std::vector<char>& image) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (char c : image) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;  // FNV-1a 64 prime
  }
  constexpr char kDigits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4) text[i] = kDigits[hash & 0xf];
  return text;
}

}  // namespace tuned
