#include "core/cubin.hpp"

#include <cstdint>
#include <cstring>
#include <string>

#include "tuned/error.hpp"

namespace tuned {

namespace {

template <typename T>
T read_at(const std::vector<char>& image, size_t offset) {
  if (offset + sizeof(T) > image.size()) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR, "cubin: truncated ELF file");
  }
  T value;
  std::memcpy(&value, image.data() + offset, sizeof(T));
  return value;
}

// Sections that do not change what runs: debug and line information, symbols and names.
bool describes_only(const std::string& name) {
  for (const char* prefix :
       {".debug", ".nv_debug", ".rel.debug", ".rela.debug", ".nv.rel.action"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return name == ".symtab" || name == ".strtab" || name == ".shstrtab" || name.empty();
}

}  // namespace

std::string cubin_code_digest(const std::vector<char>& image) {
  constexpr char kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
  if (image.size() < 64 || std::memcmp(image.data(), kElfMagic, 4) != 0 || image[4] != 2 ||
      image[5] != 1) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR, "cubin: not a 64-bit little-endian ELF file");
  }
  const auto shoff = read_at<uint64_t>(image, 0x28);
  const auto shentsize = read_at<uint16_t>(image, 0x3A);
  const auto shnum = read_at<uint16_t>(image, 0x3C);
  const auto shstrndx = read_at<uint16_t>(image, 0x3E);
  auto section = [&](size_t i, size_t field) { return shoff + i * shentsize + field; };
  const auto names_at = read_at<uint64_t>(image, section(shstrndx, 0x18));
  std::vector<char> code;
  for (size_t i = 0; i < shnum; ++i) {
    const auto name_offset = read_at<uint32_t>(image, section(i, 0x00));
    const auto type = read_at<uint32_t>(image, section(i, 0x04));
    const auto offset = read_at<uint64_t>(image, section(i, 0x18));
    const auto size = read_at<uint64_t>(image, section(i, 0x20));
    std::string name;
    for (size_t at = names_at + name_offset; at < image.size() && image[at] != 0; ++at) {
      name += image[at];
    }
    if (describes_only(name)) continue;
    code.insert(code.end(), name.begin(), name.end());
    code.push_back('\0');
    constexpr uint32_t kNoBits = 8;  // SHT_NOBITS: sized, but nothing in the file
    if (type == kNoBits) {
      const std::string bytes = std::to_string(size);
      code.insert(code.end(), bytes.begin(), bytes.end());
      continue;
    }
    if (offset + size > image.size()) {
      throw Error(TUNED_STATUS_INTERNAL_ERROR, "cubin: section " + name + " past the file's end");
    }
    code.insert(code.end(), image.begin() + static_cast<std::ptrdiff_t>(offset),
                image.begin() + static_cast<std::ptrdiff_t>(offset + size));
  }
  return cubin_checksum(code);
}

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
