// Kernel templates made of several files: a template's quoted includes of other template files are
// expanded in place, each file once, between #line directives, and the hash that keys cubins and
// bests covers every file of the closure. (Through TUNED_TEMPLATE_DIR, with names no embedded
// template has, so the process's other templates are untouched.)
#include "templates/template_source.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tuned/error.hpp"

namespace tuned {
namespace {

class TemplateSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "template_source_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    setenv("TUNED_TEMPLATE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("TUNED_TEMPLATE_DIR");
    std::filesystem::remove_all(dir_);
  }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  std::string dir_;
};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(TemplateSourceTest, IncludesExpandOnceInPlaceWithLineDirectives) {
  write("ts_shared.cuh", "// shared\nconstexpr int kShared = 1;\n");
  write("ts_family.cuh", "#include \"ts_shared.cuh\"\nconstexpr int kFamily = kShared + 1;\n");
  write("ts_kernel.cu",
        "// kernel\n#include \"ts_shared.cuh\"\n  #  include \"ts_family.cuh\"\n#include "
        "<cuda/std/cstdint>\n"
        "extern \"C\" __global__ void k() {}\n");
  const TemplateSource& source = template_source("ts_kernel.cu");
  EXPECT_EQ(source.text,
            "// kernel\n"
            "#line 1 \"ts_shared.cuh\"\n// shared\nconstexpr int kShared = 1;\n"
            "#line 3 \"ts_kernel.cu\"\n"
            "#line 1 \"ts_family.cuh\"\n"
            "constexpr int kFamily = kShared + 1;\n"  // ts_shared.cuh is in already
            "#line 4 \"ts_kernel.cu\"\n"
            "#include <cuda/std/cstdint>\n"  // not a template: NVRTC's
            "extern \"C\" __global__ void k() {}\n");
  EXPECT_EQ(count(source.text, "kShared = 1"), 1u);
}

TEST_F(TemplateSourceTest, TheHashCoversEveryIncludedFile) {
  write("ts_h1.cuh", "constexpr int kA = 1;\n");
  write("ts_k1.cu", "#include \"ts_h1.cuh\"\n");
  write("ts_h2.cuh", "constexpr int kA = 2;\n");  // the same kernel, its header changed
  write("ts_k2.cu", "#include \"ts_h2.cuh\"\n");
  const TemplateSource& one = template_source("ts_k1.cu");
  const TemplateSource& two = template_source("ts_k2.cu");
  EXPECT_NE(one.hash, two.hash);
  EXPECT_EQ(one.hash, fnv1a_hex(one.text));
  // A file that includes nothing is compiled, and hashed, as written.
  write("ts_plain.cu", "extern \"C\" __global__ void k() {}\n");
  EXPECT_EQ(template_source("ts_plain.cu").text, "extern \"C\" __global__ void k() {}\n");
}

TEST_F(TemplateSourceTest, AnIncludeOfNoTemplateNamesBoth) {
  write("ts_broken.cu", "#include \"ts_missing.cuh\"\n");
  try {
    template_source("ts_broken.cu");
    FAIL() << "an include of a missing file went unnoticed";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_INTERNAL_ERROR);
    EXPECT_NE(std::string(e.what()).find("ts_broken.cu includes ts_missing.cuh"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(template_source("ts_nothing_at_all.cu"), Error);
}

TEST_F(TemplateSourceTest, EveryEmbeddedTemplateExpands) {
  unsetenv("TUNED_TEMPLATE_DIR");
  for (const auto& t : detail::embedded_templates()) {
    const std::string name = t.name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".cuh") == 0) continue;  // headers
    EXPECT_NO_THROW(template_source(name)) << name;
    EXPECT_EQ(template_source(name).text.find("#include \""), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace tuned
