// precompile: runs at build time (NVRTC needs no GPU) and compiles every kernel the selection
// model can pick, for the architectures of the GPU models it was fitted on, plus the check
// kernels first-use tuning verifies with; writes them, compressed, as one blob and a C++ source
// that indexes it (generator/precompiled.hpp), which becomes part of libtuned.
// The images depend on nothing but the sources and the NVRTC version: NVRTC writes its working
// directory into the line information (-lineinfo), so precompile works in "/" wherever it runs, and
// two build directories of one commit give byte-identical precompiled.bin.
// Images already built by an earlier run in --reuse DIR are taken from there (they are exact:
// keyed by source hash, options, arch and NVRTC version), so a rebuild after a change elsewhere in
// the library does not compile the whole portfolio again.
//   precompile --out-dir DIR [--reuse DIR] [--jobs N] [--max-kernels N] [--code-digests FILE]
#include <CLI/CLI.hpp>

#define ZDICT_STATIC_LINKING_ONLY  // ZDICT_trainFromBuffer_fastCover (libzstd is linked statically)
#include <zdict.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "cache/selection_model.hpp"
#include "cache/shipped_defaults.hpp"
#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/check/device_check.hpp"
#include "templates/registry.hpp"
#include "tools/tool_version.hpp"
#include "tuned/error.hpp"

namespace {

using namespace tuned;

struct Job {
  KernelSpec spec;
  int cc = 0;
  CubinKey key;
  BuiltKernel built;
  std::string error;
};

// Earlier runs' images, one file each: a header line (registers spill stack smem) and the image.
class ImageDirectory : public CubinStore {
 public:
  explicit ImageDirectory(std::string dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
  }
  std::optional<CubinRecord> find(const CubinKey& key) override {
    std::ifstream in(path(key), std::ios::binary);
    CubinRecord cubin;
    if (!(in >> cubin.registers >> cubin.spill_bytes >> cubin.stack_bytes >>
          cubin.static_smem_bytes) ||
        in.get() != '\n') {
      return std::nullopt;
    }
    cubin.image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (cubin.image.empty()) return std::nullopt;
    return cubin;
  }
  void put(const CubinKey& key, const CubinRecord& cubin) override {
    // Written aside and renamed, so an interrupted build leaves no truncated image behind.
    const std::string final_path = path(key), part = final_path + ".part";
    {
      std::ofstream out(part, std::ios::binary);
      out << cubin.registers << ' ' << cubin.spill_bytes << ' ' << cubin.stack_bytes << ' '
          << cubin.static_smem_bytes << '\n';
      out.write(cubin.image.data(), static_cast<std::streamsize>(cubin.image.size()));
      if (!out) return;
    }
    std::error_code ignored;
    std::filesystem::rename(part, final_path, ignored);
  }
  void drop(const CubinKey& key) override {
    std::error_code ignored;
    std::filesystem::remove(path(key), ignored);
  }

 private:
  std::string path(const CubinKey& key) const {
    const std::string text =
        key.source_hash + "|" + key.options + "|" + key.arch + "|" + key.nvrtc_version;
    return dir_ + "/" + cubin_checksum(std::vector<char>(text.begin(), text.end())) + ".img";
  }
  std::string dir_;
};

std::string c_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// The images to build, each once (by arch|kernel|options), and the architectures they are for.
struct JobSet {
  std::map<std::string, Job> jobs;
  std::set<int> archs;

  void add(const KernelSpec& spec, int cc) {
    Job job;
    job.spec = spec;
    job.cc = cc;
    job.key = cubin_key(spec, reference_device(cc));
    jobs.emplace(job.key.arch + "|" + spec.kernel_name + "|" + job.key.options, std::move(job));
  }
};

// The variants an entry's data serves (OpFace::data_variant), as they run it (GEMM's TF32
// compute type: split TF32 in its one-product form).
void add_served_variants(const OpRegistration& op, const Config& config, const ProblemId& id,
                         int cc, JobSet& set) {
  for (int v = 0; v < static_cast<int>(op.variants.size()); ++v) {
    if (v == id.variant || op.face->data_variant(v) != id.variant) continue;
    ProblemId served_id = id;
    served_id.variant = v;
    const Config served = op.face->serve(config, served_id);
    if (!(served == config)) set.add(op.face->kernel_spec(served, served_id), cc);
  }
}

// An entry that runs as it is on problems of narrower alignment too (GEMM: one that packs
// its operands) may need another kernel there (GEMM: C stored narrower), and on large
// problems of its own alignment another form (GEMM: slice sums in partial chains past
// k = 1024, or k split past 4096): built as well, or a fresh process's first call of such a
// problem would wait for NVRTC (60-80 ms on an H100). Both at the entry's own size and a large
// one: an unaligned problem of either needs its own form (GEMM: a TMA-fed entry packed with C
// stored narrower, in one chain of slice sums up to k = 1024 and in partial chains past it;
// with the large size alone, a random TN product of k = 1093 compiled for 1.2 s at its first
// call).
void add_fitted_forms(const OpRegistration& op, const Config& config, const ProblemId& id, int cc,
                      JobSet& set) {
  for (const int64_t size : {int64_t{1024}, int64_t{8192}}) {
    for (int alignment : {4, 2, 1}) {
      ProblemId at = id;
      for (int i = 0; i < at.rank; ++i) at.dims[i] = std::min(size, op.range_of(i).second);
      at.alignment = alignment;
      try {
        // As the runtime takes it: served there (GEMM: a TMA-fed entry packs), then fitted.
        const Config served = op.face->serve(config, at);
        const Config fitted = op.face->fit(served, reference_device(cc), at);
        if (fitted == served || alignment == id.alignment) {
          set.add(op.face->kernel_spec(fitted, at), cc);
        }
      } catch (const Error&) {  // not valid there: the runtime would not run it
      }
    }
  }
}

// Every kernel the selection model can pick, in every form the runtime may run it in.
void add_model_entries(JobSet& set) {
  for (const auto& e : cache::SelectionModel::builtin().entries()) {
    const OpRegistration& op = find_op(e.op);
    ProblemId id;
    id.variant = op.variant_index(e.variant);
    id.rank = op.rank();
    for (int i = 0; i < id.rank; ++i) id.dims[i] = 1024;
    id.alignment = 4;
    const Config config = read_config(e.config, op.params);
    set.add(op.face->kernel_spec(config, id), e.cc);
    set.archs.insert(e.cc);
    add_served_variants(op, config, id, e.cc, set);
    add_fitted_forms(op, config, id, e.cc, set);
  }
}

// The shipped exact bests (the suite's shapes): a fresh process's first call of one of those
// shapes must not compile either.
void add_shipped_bests(JobSet& set) {
  for (const auto& row : cache::ShippedDefaults::builtin().rows()) {
    const OpRegistration& op = find_op(row.best.key.op);
    ProblemId id;
    id.variant = op.variant_index(row.best.key.variant);
    id.rank = op.rank();
    for (int i = 0; i < id.rank; ++i) id.dims[i] = row.best.key.shape.at(i);
    id.alignment = row.best.key.alignment;
    // As the runtime takes it (served, then fitted: GEMM's slice sums in partial chains on a
    // k the row's one chain does not reach).
    const Config config = read_config(row.best.config, op.params);
    try {
      const Config served = op.face->serve(config, id);
      set.add(op.face->kernel_spec(op.face->fit(served, reference_device(row.cc), id), id), row.cc);
    } catch (const Error&) {  // not valid there: the runtime would not run it
    }
    set.archs.insert(row.cc);
  }
}

// Every op's built-in fallback for each alignment class: the last answer of the runtime's
// choice (and what one op's call of another, like gemm's PRETB transpose, meets first).
void add_fallbacks(const OpRegistration& op, int cc, JobSet& set) {
  for (int alignment : {1, 2, 4}) {
    ProblemId id;
    id.rank = op.rank();
    for (int i = 0; i < id.rank; ++i) id.dims[i] = std::max<int64_t>(op.range_of(i).first, 1024);
    for (int i = 0; i < id.rank; ++i) id.dims[i] = std::min(id.dims[i], op.range_of(i).second);
    id.alignment = alignment;
    for (id.variant = 0; id.variant < static_cast<int>(op.variants.size()); ++id.variant) {
      const Config fallback = op.face->fallback_config(reference_device(cc), id);
      set.add(op.face->kernel_spec(fallback, id), cc);
    }
  }
}

// Per architecture: the check kernels, every op's support kernels and its fallbacks.
void add_arch_kernels(JobSet& set) {
  for (int cc : set.archs) {
    for (const auto& spec : DeviceCheck::kernel_specs()) set.add(spec, cc);
    for (const auto& op : op_registrations()) {
      for (const auto& spec : op.face->support_kernels()) set.add(spec, cc);
    }
    for (const auto& op : op_registrations()) add_fallbacks(op, cc, set);
  }
}

// The jobs in key order, the first max_kernels of them where that is set.
std::vector<Job*> first_jobs(JobSet& set, size_t max_kernels) {
  std::vector<Job*> list;
  for (auto& [k, job] : set.jobs) {
    if (max_kernels > 0 && list.size() == max_kernels) break;
    list.push_back(&job);
  }
  return list;
}

int thread_count(int jobs_wanted) {
  return jobs_wanted > 0 ? jobs_wanted
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Builds every job on a pool of threads; a job that fails keeps its error.
void build_all(const std::vector<Job*>& list, const std::string& reuse_dir, int jobs_wanted) {
  std::atomic<size_t> next{0};
  std::unique_ptr<ImageDirectory> reuse;
  if (!reuse_dir.empty()) reuse = std::make_unique<ImageDirectory>(reuse_dir);
  KernelCache kernels(reuse.get());  // without --reuse, every image is compiled here
  auto work = [&] {
    for (size_t i; (i = next++) < list.size();) {
      Job& job = *list[i];
      try {
        job.built = kernels.build(job.spec, reference_device(job.cc));
      } catch (const Error& e) {
        job.error = e.what();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < thread_count(jobs_wanted); ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
}

// How the images are stored (generator/precompiled.hpp): each one a zstd frame with a checksum of
// its content, compressed with one dictionary trained on all of them. Measured on the 1179 images
// of the shipped portfolio (210.8 MB): 40.4 MB one by one at level 9 without a dictionary,
// 26.0 MB with a 2 MiB one, 22.1 MB with it at level 19 (9.5x; about a minute of one core here,
// spread over --jobs), decompressed in 0.14 ms an image. Larger dictionaries gained little.
constexpr int kLevel = 19;
constexpr size_t kDictionaryCapacity = size_t{2} << 20;
constexpr char kFormat[] = "zstd 19, checksums, fastCover dictionary k 2048 d 8 f 20 of 2 MiB";

// A dictionary trained on the images, or empty where they are too few to train one on (fastCover
// needs five; a small --max-kernels build) or training fails: the frames then stand alone.
std::string train_dictionary(const std::vector<Job*>& list) {
  std::string samples;
  std::vector<size_t> sizes;
  for (const Job* job : list) {
    samples.append(job->built.cubin.image.begin(), job->built.cubin.image.end());
    sizes.push_back(job->built.cubin.image.size());
  }
  const size_t capacity = std::min(kDictionaryCapacity, samples.size() / 16);
  if (list.size() < 5 || capacity < 4096) return {};
  ZDICT_fastCover_params_t params{};
  params.k = 2048;
  params.d = 8;
  params.f = 20;
  params.accel = 1;
  params.nbThreads = 1;  // the same dictionary on every machine
  // The level its entropy tables are measured at: 3 gave the same ratio as 19 in a 30th the time.
  params.zParams.compressionLevel = 3;
  std::string dictionary(capacity, '\0');
  const size_t size =
      ZDICT_trainFromBuffer_fastCover(dictionary.data(), dictionary.size(), samples.data(),
                                      sizes.data(), static_cast<unsigned>(sizes.size()), params);
  if (ZDICT_isError(size)) {
    std::fprintf(stderr, "precompile: no dictionary (%s): images compressed alone\n",
                 ZDICT_getErrorName(size));
    return {};
  }
  dictionary.resize(size);
  return dictionary;
}

// Each image as one zstd frame, on a pool of threads; throws Error where zstd fails.
std::vector<std::string> compress_images(const std::vector<Job*>& list,
                                         const std::string& dictionary, int threads) {
  const std::unique_ptr<ZSTD_CDict, size_t (*)(ZSTD_CDict*)> prepared(
      dictionary.empty() ? nullptr : ZSTD_createCDict(dictionary.data(), dictionary.size(), kLevel),
      ZSTD_freeCDict);
  if (!dictionary.empty() && !prepared) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR, "zstd does not take the trained dictionary");
  }
  using Context = std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)>;
  std::vector<Context> contexts;
  for (int t = 0; t < threads; ++t) {
    Context& context = contexts.emplace_back(ZSTD_createCCtx(), ZSTD_freeCCtx);
    if (!context) throw Error(TUNED_STATUS_INTERNAL_ERROR, "zstd: out of memory");
    ZSTD_CCtx_setParameter(context.get(), ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(context.get(), ZSTD_c_compressionLevel, kLevel);
    if (prepared) ZSTD_CCtx_refCDict(context.get(), prepared.get());
  }
  std::vector<std::string> frames(list.size());
  std::vector<std::string> errors(list.size());
  std::atomic<size_t> next{0};
  auto work = [&](ZSTD_CCtx* context) {
    for (size_t i; (i = next++) < list.size();) {
      const auto& image = list[i]->built.cubin.image;
      std::string frame(ZSTD_compressBound(image.size()), '\0');
      const size_t size =
          ZSTD_compress2(context, frame.data(), frame.size(), image.data(), image.size());
      if (ZSTD_isError(size)) {
        errors[i] = list[i]->spec.kernel_name + ": zstd: " + ZSTD_getErrorName(size);
        continue;
      }
      frame.resize(size);
      frames[i] = std::move(frame);
    }
  };
  std::vector<std::thread> pool;
  for (auto& context : contexts) pool.emplace_back(work, context.get());
  for (auto& t : pool) t.join();
  for (const auto& error : errors) {
    if (!error.empty()) throw Error(TUNED_STATUS_INTERNAL_ERROR, error);
  }
  return frames;
}

// Everything the outputs are made of: equal fingerprints give byte-identical outputs, which are
// then kept as they are (compressing takes a minute; a rebuild after a change elsewhere in the
// library has the same images).
std::string fingerprint(const std::vector<Job*>& list, const std::string& blob_path) {
  std::string text = std::string(kFormat) + "\n" + blob_path + "\n";
  for (const Job* job : list) {
    text += job->key.source_hash + "|" + job->key.options + "|" + job->key.arch + "|" +
            job->spec.kernel_name + "|" + std::to_string(job->built.cubin.registers) + "|" +
            std::to_string(job->built.cubin.image.size()) + "|" +
            cubin_checksum(job->built.cubin.image) + "\n";
  }
  return cubin_checksum(std::vector<char>(text.begin(), text.end()));
}

// The first line of the table source: it names the inputs and the blob's size.
std::string stamp(const std::string& inputs, size_t blob_size) {
  return "// Generated by tools/precompile: kernels built into libtuned (inputs " + inputs + ", " +
         std::to_string(blob_size) + " bytes of images).";
}

// True where out_dir holds the outputs of these inputs already: they are then marked as new,
// for the build tool, and left as they are.
bool outputs_current(const std::string& out_dir, const std::string& inputs) {
  const std::string blob_path = out_dir + "/precompiled.bin";
  const std::string table_path = out_dir + "/precompiled_table.cpp";
  std::error_code error;
  const auto blob_size = std::filesystem::file_size(blob_path, error);
  if (error) return false;
  std::ifstream table(table_path);
  std::string first_line;
  if (!std::getline(table, first_line) || first_line != stamp(inputs, blob_size)) return false;
  const auto now = std::filesystem::file_time_type::clock::now();
  std::filesystem::last_write_time(blob_path, now, error);
  std::filesystem::last_write_time(table_path, now, error);
  return !error;
}

// Writes precompiled.bin and precompiled_table.cpp; 1 on the first failed job or a failed write.
int write_outputs(const std::vector<Job*>& list, const std::string& out_dir, int threads) {
  for (Job* job : list) {
    if (!job->error.empty()) {
      std::fprintf(stderr, "precompile: %s\n", job->error.c_str());
      return 1;
    }
    if (job->built.cubin.spill_bytes > 0) {
      std::fprintf(stderr, "precompile: warning: %s spills %d bytes\n",
                   job->spec.kernel_name.c_str(), job->built.cubin.spill_bytes);
    }
  }
  std::filesystem::create_directories(out_dir);
  const std::string blob_path = std::filesystem::absolute(out_dir + "/precompiled.bin").string();
  const std::string inputs = fingerprint(list, blob_path);
  if (outputs_current(out_dir, inputs)) {
    std::printf("precompile: %zu kernels, as built before: %s kept\n", list.size(),
                out_dir.c_str());
    return 0;
  }
  const std::string dictionary = train_dictionary(list);
  const std::vector<std::string> frames = compress_images(list, dictionary, threads);
  size_t blob_size = dictionary.size(), images_size = 0;
  for (const auto& frame : frames) blob_size += frame.size();

  std::ofstream blob(blob_path, std::ios::binary);
  std::ofstream src(out_dir + "/precompiled_table.cpp");
  blob.write(dictionary.data(), static_cast<std::streamsize>(dictionary.size()));
  src << stamp(inputs, blob_size) << "\n"
      << "#include \"generator/precompiled.hpp\"\n\n"
         "__asm__(\".section .rodata\\n.balign 16\\n.hidden tuned_precompiled_blob\\n"
         ".globl tuned_precompiled_blob\\ntuned_precompiled_blob:\\n.incbin \\\""
      << blob_path << "\\\"\\n.byte 0\\n.previous\\n\");\n"
      << "extern \"C\" const unsigned char tuned_precompiled_blob[];\n\n"
         "namespace tuned::detail {\nnamespace {\nconst PrecompiledEntry kEntries[] = {\n";
  size_t offset = dictionary.size();
  for (size_t i = 0; i < list.size(); ++i) {
    const Job* job = list[i];
    const std::string& frame = frames[i];
    blob.write(frame.data(), static_cast<std::streamsize>(frame.size()));
    src << "  {" << c_string(job->key.source_hash) << ", " << c_string(job->key.options) << ", "
        << c_string(job->key.arch) << ", " << c_string(job->spec.kernel_name) << ", " << offset
        << ", " << frame.size() << ", " << job->built.cubin.image.size() << ", "
        << job->built.cubin.registers << "},\n";
    offset += frame.size();
    images_size += job->built.cubin.image.size();
  }
  if (list.empty()) src << "  {\"\", \"\", \"\", \"\", 0, 0, 0, 0},\n";
  src << "};\n}  // namespace\n\nPrecompiledTable precompiled_table() {\n  return {kEntries, "
      << list.size() << ", tuned_precompiled_blob, " << blob_size << ", " << dictionary.size()
      << "};\n}\n\n}  // namespace tuned::detail\n";
  if (!blob || !src) {
    std::fprintf(stderr, "precompile: cannot write %s\n", out_dir.c_str());
    return 1;
  }
  std::printf(
      "precompile: %zu kernels, %zu bytes of images in %zu compressed (%.1fx; dictionary %zu)\n",
      list.size(), images_size, blob_size,
      blob_size ? static_cast<double>(images_size) / static_cast<double>(blob_size) : 0.0,
      dictionary.size());
  return 0;
}

// "kernel arch digest" per image, sorted: what each kernel runs (cubin_code_digest), so two
// builds of reorganised sources can be compared kernel by kernel (same digest: same machine code).
int write_code_digests(const std::vector<Job*>& list, const std::string& path) {
  std::vector<std::string> lines;
  for (const Job* job : list) {
    lines.push_back(job->spec.kernel_name + " " + job->key.arch + " " +
                    cubin_code_digest(job->built.cubin.image));
  }
  std::sort(lines.begin(), lines.end());
  std::ofstream out(path);
  for (const auto& line : lines) out << line << "\n";
  if (!out) {
    std::fprintf(stderr, "precompile: cannot write %s\n", path.c_str());
    return 1;
  }
  std::printf("precompile: code digests of %zu kernels in %s\n", lines.size(), path.c_str());
  return 0;
}

int run(const std::string& out_dir, const std::string& reuse_dir, int jobs_wanted,
        size_t max_kernels, const std::string& digests_path) {
  JobSet set;
  add_model_entries(set);
  add_shipped_bests(set);
  add_arch_kernels(set);
  const std::vector<Job*> list = first_jobs(set, max_kernels);
  build_all(list, reuse_dir, jobs_wanted);
  const int failed = write_outputs(list, out_dir, thread_count(jobs_wanted));
  if (failed || digests_path.empty()) return failed;
  return write_code_digests(list, digests_path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Compiles the selection model's kernels ahead of time (build step).", "precompile"};
  tuned::tools::add_version_flag(app, "precompile");
  std::string out_dir;
  int jobs = 0;
  size_t max_kernels = 0;
  std::string reuse_dir;
  app.add_option("--out-dir", out_dir, "where precompiled.bin and precompiled_table.cpp go")
      ->required();
  app.add_option("--reuse", reuse_dir,
                 "a directory of earlier runs' images, reused where their key matches (and "
                 "where new ones are kept)");
  app.add_option("--jobs", jobs, "compile threads (default: all cores)");
  std::string digests_path;
  app.add_option("--code-digests", digests_path,
                 "also write each kernel's code digest (name, arch, digest of its machine code "
                 "without line information) here: compare two builds kernel by kernel");
  app.add_option("--max-kernels", max_kernels,
                 "build only the first N images (the reproducibility test; default: all)");
  CLI11_PARSE(app, argc, argv);
  try {
    // NVRTC records the working directory in every image: the same one for every build.
    out_dir = std::filesystem::absolute(out_dir).string();
    if (!reuse_dir.empty()) reuse_dir = std::filesystem::absolute(reuse_dir).string();
    if (!digests_path.empty()) digests_path = std::filesystem::absolute(digests_path).string();
    std::filesystem::current_path("/");
    return run(out_dir, reuse_dir, jobs, max_kernels, digests_path);
  } catch (const tuned::Error& e) {
    std::fprintf(stderr, "precompile: %s\n", e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::fprintf(stderr, "precompile: %s\n", e.what());
    return 1;
  }
}
