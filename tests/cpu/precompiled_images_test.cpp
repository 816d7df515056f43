// The precompiled kernel images (generator/precompiled.hpp): every entry of the library's table
// decompresses to an ELF cubin of the size it records, and a damaged entry (a flipped byte, a
// truncated frame, a wrong size or offset, a damaged dictionary) is refused with an error naming
// it, or, through find(), left to NVRTC with one line in the log.
#include <gtest/gtest.h>
#include <zstd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "generator/precompiled.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuned/error.hpp"

namespace tuned {
namespace {

using detail::PrecompiledImages;
using detail::PrecompiledTable;

template <typename T>
T read_le(const std::vector<char>& bytes, size_t at) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return value;
}

// What the driver reads of an ELF64 file: a CUDA one, its header tables inside the image.
::testing::AssertionResult is_cubin(const std::vector<char>& image) {
  if (image.size() < 64) return ::testing::AssertionFailure() << image.size() << " bytes";
  if (std::memcmp(image.data(), "\177ELF", 4) != 0) {
    return ::testing::AssertionFailure() << "no ELF magic";
  }
  if (image[4] != 2 || image[5] != 1) {
    return ::testing::AssertionFailure() << "not ELF64 little-endian";
  }
  if (read_le<uint16_t>(image, 18) != 190) {
    return ::testing::AssertionFailure() << "e_machine " << read_le<uint16_t>(image, 18);
  }
  const uint64_t phoff = read_le<uint64_t>(image, 32), shoff = read_le<uint64_t>(image, 40);
  const uint64_t phsize = uint64_t{read_le<uint16_t>(image, 54)} * read_le<uint16_t>(image, 56);
  const uint64_t shsize = uint64_t{read_le<uint16_t>(image, 58)} * read_le<uint16_t>(image, 60);
  if (phoff + phsize > image.size() || shoff + shsize > image.size() || shsize == 0) {
    return ::testing::AssertionFailure()
           << "header tables (" << phoff << "+" << phsize << ", " << shoff << "+" << shsize
           << ") outside its " << image.size() << " bytes";
  }
  return ::testing::AssertionSuccess();
}

TEST(PrecompiledImages, EveryEntryIsACubinOfItsRecordedSize) {
  const PrecompiledTable table = detail::precompiled_table();
  if (table.count == 0) GTEST_SKIP() << "built with TUNED_PRECOMPILE=OFF";
  const PrecompiledImages images(table);
  size_t next_offset = table.dictionary_size, images_size = 0;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < table.count; ++i) {
    const PrecompiledEntry& e = table.entries[i];
    // The frames follow the dictionary one after the other, so none is cut short.
    EXPECT_EQ(e.offset, next_offset) << i << " " << e.kernel_name;
    next_offset = e.offset + e.compressed_size;
    const std::vector<char> image = images.image(i);
    EXPECT_EQ(image.size(), e.size) << i << " " << e.kernel_name;
    EXPECT_TRUE(is_cubin(image)) << i << " " << e.kernel_name;
    images_size += image.size();
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(next_offset, table.blob_size);
  // What keeps the binaries small: at the time of writing 9.5x.
  EXPECT_LT(table.blob_size * 4, images_size) << table.blob_size << " of " << images_size;
  std::printf("%zu images, %zu bytes in %zu (dictionary %zu): %.1fx; %.3f ms an image\n",
              table.count, images_size, table.blob_size, table.dictionary_size,
              static_cast<double>(images_size) / static_cast<double>(table.blob_size),
              ms / static_cast<double>(table.count));
}

TEST(PrecompiledImages, FindServesTheEntrysImage) {
  const PrecompiledTable table = detail::precompiled_table();
  if (table.count == 0) GTEST_SKIP() << "built with TUNED_PRECOMPILE=OFF";
  const PrecompiledEntry& e = table.entries[table.count / 2];
  CubinKey key{e.source_hash, e.options, e.arch, "any NVRTC"};
  const auto found = find_precompiled(key, e.kernel_name);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->image, PrecompiledImages(table).image(table.count / 2));
  EXPECT_EQ(found->registers, e.registers);
  key.options += " -DOTHER";
  EXPECT_FALSE(find_precompiled(key, e.kernel_name));
}

// A table to damage: a copy of the library's blob and entries, or where the library has none
// (TUNED_PRECOMPILE=OFF builds), two frames made here, without a dictionary.
class DamagedTable : public ::testing::Test {
 protected:
  void SetUp() override {
    const PrecompiledTable built = detail::precompiled_table();
    if (built.count > 0) {
      blob_.assign(built.blob, built.blob + built.blob_size);
      entries_.assign(built.entries, built.entries + built.count);
      dictionary_size_ = built.dictionary_size;
      return;
    }
    for (const char* name : {"first_kernel", "second_kernel"}) {
      std::vector<char> image(4096, '\0');
      std::memcpy(image.data(), "\177ELF\2\1", 6);
      image[18] = static_cast<char>(190);
      image[58] = 64;  // one section header at offset 0
      image[60] = 1;
      for (size_t i = 64; i < image.size(); ++i) image[i] = static_cast<char>(i * 7 % 251);
      std::vector<unsigned char> frame(ZSTD_compressBound(image.size()));
      ZSTD_CCtx* context = ZSTD_createCCtx();
      ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1);
      const size_t size =
          ZSTD_compress2(context, frame.data(), frame.size(), image.data(), image.size());
      ZSTD_freeCCtx(context);
      ASSERT_FALSE(ZSTD_isError(size));
      entries_.push_back({"hash", "-O3", "sm_90", name, blob_.size(), size, image.size(), 32});
      blob_.insert(blob_.end(), frame.begin(), frame.begin() + static_cast<ptrdiff_t>(size));
    }
  }
  void TearDown() override {
    set_log_level(LogLevel::kOff);
    set_log_file("");
  }
  PrecompiledTable table() const {
    return {entries_.data(), entries_.size(), blob_.data(), blob_.size(), dictionary_size_};
  }
  // image(0) of the table as it is now must throw an Error naming entry 0 and saying why; the
  // others are served as before where the damage is entry 0's alone.
  void expect_refused(const std::string& why, bool others_intact = true) {
    const PrecompiledImages images(table());
    try {
      images.image(0);
      ADD_FAILURE() << "a damaged image was served (" << why << ")";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), TUNED_STATUS_LAUNCH_ERROR) << e.what();
      const std::string message = e.what();
      EXPECT_NE(message.find(std::string("precompiled image 0 (") + entries_[0].kernel_name),
                std::string::npos)
          << message;
      EXPECT_NE(message.find(why), std::string::npos) << message;
    }
    if (others_intact) {
      EXPECT_TRUE(is_cubin(images.image(1)));
    }
  }
  // With the dictionary the frames share damaged: no image is served with other bytes than the
  // intact table gives, and some are refused. Returns how many.
  size_t expect_no_wrong_image(const std::vector<unsigned char>& intact_blob) {
    PrecompiledTable intact_table = table();
    intact_table.blob = intact_blob.data();
    const PrecompiledImages intact(intact_table), damaged(table());
    size_t refused = 0;
    for (size_t i = 0; i < entries_.size(); ++i) {
      try {
        EXPECT_EQ(damaged.image(i), intact.image(i)) << i;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("precompiled image " + std::to_string(i) + " ("),
                  std::string::npos)
            << e.what();
        ++refused;
      }
    }
    EXPECT_GT(refused, 0u);
    return refused;
  }

  std::vector<unsigned char> blob_;
  std::vector<PrecompiledEntry> entries_;
  size_t dictionary_size_ = 0;
};

TEST_F(DamagedTable, IntactFirst) { EXPECT_TRUE(is_cubin(PrecompiledImages(table()).image(0))); }

TEST_F(DamagedTable, AFlippedByteFailsTheChecksum) {
  blob_[entries_[0].offset + entries_[0].compressed_size / 2] ^= 0x20;
  expect_refused("zstd: ");
}

TEST_F(DamagedTable, ATruncatedFrame) {
  entries_[0].compressed_size -= 5;
  expect_refused("zstd: ");
}

TEST_F(DamagedTable, ASizeTheFrameDoesNotHold) {
  entries_[0].size += 1;
  expect_refused("the table records " + std::to_string(entries_[0].size));
}

TEST_F(DamagedTable, AnOffsetOutsideTheBlob) {
  entries_[0].offset = blob_.size() - 2;
  expect_refused("outside the " + std::to_string(blob_.size()) + "-byte blob");
  entries_[0].offset = size_t{0} - 1;
  expect_refused("outside");
}

TEST_F(DamagedTable, NotAFrame) {
  std::memset(blob_.data() + entries_[0].offset, 'x', 8);
  expect_refused("not a zstd frame");
}

TEST_F(DamagedTable, ADamagedDictionary) {
  if (dictionary_size_ == 0) GTEST_SKIP() << "no precompiled images, so no dictionary";
  const std::vector<unsigned char> intact = blob_;
  // Its header (ID, entropy tables): every image refused, the dictionary named.
  for (size_t i = 8; i < 64; ++i) blob_[i] ^= 0x55;
  EXPECT_EQ(expect_no_wrong_image(intact), entries_.size());
  expect_refused("dictionary", false);
  // Its content: what was decoded from the damaged part fails its checksum.
  blob_ = intact;
  for (size_t i = dictionary_size_ / 2; i < dictionary_size_; ++i) blob_[i] ^= 0x55;
  std::printf("%zu of %zu images refused\n", expect_no_wrong_image(intact), entries_.size());
}

TEST_F(DamagedTable, AnIndexBeyondTheTable) {
  try {
    PrecompiledImages(table()).image(entries_.size());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_INTERNAL_ERROR);
  }
}

TEST_F(DamagedTable, FindLeavesItToNvrtcAndLogsOnce) {
  blob_[entries_[0].offset + entries_[0].compressed_size / 2] ^= 0x20;
  const testing::TempDir dir;
  const std::string log_path = dir.file("log");
  set_log_file(log_path);
  set_log_level(LogLevel::kError);
  const PrecompiledImages images(table());
  const PrecompiledEntry& e = entries_[0];
  const CubinKey key{e.source_hash, e.options, e.arch, "any NVRTC"};
  EXPECT_FALSE(images.find(key, e.kernel_name));
  EXPECT_FALSE(images.find(key, e.kernel_name));
  const std::string log = testing::slurp(log_path);
  EXPECT_NE(log.find("[tuned error] precompiled image 0 (" + std::string(e.kernel_name)),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("compiled by NVRTC instead"), std::string::npos) << log;
  EXPECT_EQ(log.find("precompiled image 0"), log.rfind("precompiled image 0")) << log;
  const PrecompiledEntry& intact = entries_[1];
  EXPECT_TRUE(
      images.find({intact.source_hash, intact.options, intact.arch, ""}, intact.kernel_name));
}

}  // namespace
}  // namespace tuned
