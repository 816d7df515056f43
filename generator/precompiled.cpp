#include "generator/precompiled.hpp"

#include <zstd.h>

#include <cstdint>
#include <memory>

#include "core/log.hpp"
#include "tuned/error.hpp"

namespace tuned {
namespace {

// What the driver is given must be a cubin: it trusts an ELF header's offsets, so bytes that
// decompressed to something else must not reach it.
bool is_cuda_elf(const std::vector<char>& image) {
  constexpr unsigned char kMagic[] = {0x7f, 'E', 'L', 'F'};
  constexpr unsigned kElfClass64 = 2, kMachineCuda = 190;  // EI_CLASS, e_machine (EM_CUDA)
  if (image.size() < 64) return false;
  const auto* bytes = reinterpret_cast<const unsigned char*>(image.data());
  for (size_t i = 0; i < sizeof kMagic; ++i) {
    if (bytes[i] != kMagic[i]) return false;
  }
  return bytes[4] == kElfClass64 && (bytes[18] | bytes[19] << 8) == kMachineCuda;
}

}  // namespace

namespace detail {

PrecompiledImages::PrecompiledImages(const PrecompiledTable& table) : table_(table) {
  // Copied once (a few MB, about a millisecond) into zstd's prepared form, used by every lookup.
  if (table_.dictionary_size > 0 && table_.dictionary_size <= table_.blob_size) {
    dictionary_ = ZSTD_createDDict(table_.blob, table_.dictionary_size);
  }
}

PrecompiledImages::~PrecompiledImages() { ZSTD_freeDDict(dictionary_); }

std::vector<char> PrecompiledImages::image(size_t index) const {
  if (index >= table_.count) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR, "precompiled image " + std::to_string(index) +
                                                 " asked for; the library has " +
                                                 std::to_string(table_.count));
  }
  const PrecompiledEntry& e = table_.entries[index];
  auto damaged = [&](const std::string& why) {
    return Error(TUNED_STATUS_LAUNCH_ERROR, "precompiled image " + std::to_string(index) + " (" +
                                                e.kernel_name + ", " + e.arch +
                                                ") is damaged: " + why);
  };
  if (e.offset < table_.dictionary_size || e.offset > table_.blob_size ||
      e.compressed_size > table_.blob_size - e.offset) {
    throw damaged("its " + std::to_string(e.compressed_size) + " bytes at offset " +
                  std::to_string(e.offset) + " lie outside the " +
                  std::to_string(table_.blob_size) + "-byte blob of images");
  }
  if (table_.dictionary_size > 0 && !dictionary_) {
    throw damaged("the library's zstd dictionary does not load");
  }
  const unsigned char* frame = table_.blob + e.offset;
  const unsigned long long content = ZSTD_getFrameContentSize(frame, e.compressed_size);
  if (content == ZSTD_CONTENTSIZE_ERROR) throw damaged("not a zstd frame");
  if (content != e.size) {
    throw damaged(content == ZSTD_CONTENTSIZE_UNKNOWN
                      ? std::string("its zstd frame records no size")
                      : "its zstd frame holds " + std::to_string(content) +
                            " bytes, the table records " + std::to_string(e.size));
  }
  std::vector<char> image(e.size);
  const std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(),
                                                                   ZSTD_freeDCtx);
  if (!context) throw Error(TUNED_STATUS_INTERNAL_ERROR, "zstd: out of memory");
  // Each frame carries a checksum of its content, which this verifies.
  const size_t written = dictionary_
                             ? ZSTD_decompress_usingDDict(context.get(), image.data(), image.size(),
                                                          frame, e.compressed_size, dictionary_)
                             : ZSTD_decompressDCtx(context.get(), image.data(), image.size(), frame,
                                                   e.compressed_size);
  if (ZSTD_isError(written)) throw damaged(std::string("zstd: ") + ZSTD_getErrorName(written));
  if (written != e.size) {
    throw damaged("it decompressed to " + std::to_string(written) + " bytes, not " +
                  std::to_string(e.size));
  }
  if (!is_cuda_elf(image)) throw damaged("it is not an ELF image for a CUDA GPU");
  return image;
}

// A scan, not an index: a process looks up a handful of kernels, and hashing every entry's key
// (hundreds of options strings) cost more than comparing the names it scans.
std::optional<CubinRecord> PrecompiledImages::find(const CubinKey& key,
                                                   const std::string& kernel_name) const {
  for (size_t i = 0; i < table_.count; ++i) {
    const PrecompiledEntry& e = table_.entries[i];
    if (kernel_name != e.kernel_name || key.options != e.options || key.arch != e.arch ||
        key.source_hash != e.source_hash) {
      continue;
    }
    CubinRecord record;
    try {
      record.image = image(i);
    } catch (const Error& error) {
      // The source is at hand: the call is served by NVRTC, and the log says the library file
      // needs replacing.
      log_once(LogLevel::kError,
               std::string("damaged precompiled image|") + e.arch + "|" + e.kernel_name + "|" +
                   e.options,
               std::string(error.what()) + "; compiled by NVRTC instead (reinstall libtuned)");
      return std::nullopt;
    }
    record.kernel_name = kernel_name;
    record.registers = e.registers;
    return record;
  }
  return std::nullopt;
}

}  // namespace detail

std::optional<CubinRecord> find_precompiled(const CubinKey& key, const std::string& kernel_name) {
  static const detail::PrecompiledImages images(detail::precompiled_table());
  return images.find(key, kernel_name);
}

size_t precompiled_count() { return detail::precompiled_table().count; }

}  // namespace tuned
