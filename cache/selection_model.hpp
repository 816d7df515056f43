// The selection model shipped with the library: per GPU model and op, a small portfolio of configs
// per variant and the measured times of that portfolio on many shapes (a sweep). For a shape nobody
// tuned, the portfolio is ranked by its regret on the nearest measured shapes. Data, not code: the
// tables are cache/shipped/*_selection_*.tsv, written by bench/fit_selection
// (scripts/shipped_data.sh, from the sweeps bench/data/MANIFEST lists). Nothing here knows an op.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tuned::cache {

class SelectionModel {
 public:
  /// Parses tables (tab-separated, '#' comments):
  ///   model  device_name  cc  op  neighbours  transfer_regret
  ///   features  sm_count  name=weight ...      (optional, once per model: see Features)
  ///   entry  variant  index  config                    (the variant's portfolio, index 0..E-1)
  ///   point  variant  alignment  d0xd1x..  ms,ms,...  [best]   (one ms per entry; '-' not
  ///                                   measured; best: the faster of cuBLAS and the sweep's best
  ///                                   config there, given where it beat every entry)
  ///   points variant  count  bytes   (optional: the next count lines, bytes in all, are point
  ///                                   lines of the variant; read only when it is first ranked)
  /// entry and point lines belong to the model line above them; a variant's entries come before
  /// its points. A point has 1 to 4 dims; its missing trailing dims, and a shape's that is
  /// ranked, read as 1 (an op's optional dims: a GEMM batch is looked up as 4 dims, a single
  /// product as 3), and a point of more dims than the shape ranked is none of its neighbours
  /// (points of batches move no single product's pick). Throws
  /// Error(TUNED_STATUS_CONFIG_ERROR, "selection model, line N: ...").
  explicit SelectionModel(std::string_view table) : SelectionModel(table, false) {}

  /// The tables built into the library (cache/shipped/*_selection_*.tsv), parsed once.
  static const SelectionModel& builtin();

  struct Ranked {
    std::string config;
    double score = 0;  // what ranks: mean log(time / best time) on the nearest shapes, each
                       // moved by the features (see Features); without them, neighbour_regret
    int entry = 0;     // index in the variant's portfolio
    // The measured regret alone (no feature moves): the confidence to weigh against another
    // prediction measured the same way, e.g. transfer_regret. Features shift every entry's score
    // by the shape's own inefficiencies, so score is an order, not a calibrated regret.
    double neighbour_regret = 0;
  };
  /// Weight of |log2(point alignment) - log2(call alignment)| in the neighbour distance, in log2
  /// units of shape: a config's time on an aligned shape (vector loads, 128-bit C stores) says
  /// little about the same config on an unaligned one, so the neighbours of a call come from its
  /// own alignment class wherever that has points nearby (on the H100 sweep, leave-one-out picks
  /// below 0.6x cuBLAS fell from 5.5 % to 3 % of problems with weight 3; 1 to 10 measure alike).
  static constexpr float kAlignmentWeight = 3.0f;
  /// Each entry is judged on the K nearest points where it was measured among the
  /// kNeighbourWindow * K nearest: an entry valid for some shapes only (the GEMM matrix-vector
  /// kernel for m or n = 1) on shapes of its kind, an entry swept on fewer problems where it ran.
  static constexpr size_t kNeighbourWindow = 8;

  /// The most one neighbour's regret is moved by the features (log time): a linear move is right
  /// near the neighbour's shape and wrong far from it, where a neighbour whose tiles were mostly
  /// padding (n = 131 under 128-wide tiles) promised an FFMA split-K entry faster than any config
  /// on a 512-column product, and a few-block grid promised the same on convolution weight
  /// gradients (k = 1.6M); on the H100 sweeps' leave-one-out a bound of 0.3 changes little
  /// (geomean 1.194 -> 1.199 NN, time-weighted within 0.002).
  static constexpr double kMaxFeatureMove = 0.3;
  /// Analytic features a ranking may weigh in (an op's OpFace::selection_features), each a
  /// log-time inefficiency of a config on a shape (e.g. work on partial tiles, SMs idle in the
  /// last wave). A neighbour measures the config where its inefficiency may differ from the
  /// call's, so each neighbour regret is moved by sum_f weight_f * (f(call) - f(neighbour)), at
  /// most kMaxFeatureMove either way: the weights and the SM count of the measuring GPU come from
  /// the model's features line (chosen by leave-one-out over the sweep, bench/fit_selection
  /// --feature-weights); a name the table lacks weighs 0.
  struct Features {
    std::vector<std::string> names;
    /// For each (SM count, shape) of at, names.size() values of config appended to out.
    std::function<void(const std::string& config,
                       const std::vector<std::pair<int, std::vector<int64_t>>>& at,
                       std::vector<double>& out)>
        values;
    int sm_count = 0;  // of the calling GPU
  };

  /// The portfolio of the variant, ranked for a call of this shape and alignment class (lowest
  /// score first, ties by entry index): the model of this GPU model, else one of the same compute
  /// capability, else nothing. accept filters entries (validity for the problem, e.g. VEC within
  /// the alignment). Neighbours: the model's K nearest points of the variant by
  /// sum |log2(d + 1) - log2(q + 1)| + kAlignmentWeight * |log2(point alignment) -
  /// log2(alignment)| (ties: table order; a dim one side lacks counts as 0), each entry's own K
  /// nearest where it was measured (see kNeighbourWindow; log(20) for each missing one). At most
  /// max_results (0: all). features (optional): see Features.
  std::vector<Ranked> rank(const std::string& op, const std::string& device_name, int cc,
                           const std::string& variant, const std::vector<int64_t>& shape,
                           int alignment, const std::function<bool(const std::string&)>& accept,
                           size_t max_results = 0, const Features* features = nullptr) const;
  /// The other GPU models of this compute capability with a model for op, in table order. Their
  /// kernels run here (one architecture, one portfolio), and a table fitted before a kernel
  /// family existed never ranks it: a caller asks them for a few picks too.
  std::vector<std::string> same_arch_devices(const std::string& op, const std::string& device_name,
                                             int cc) const;
  /// Extra log-time per unit of log2 distance when a config tuned for one shape runs another
  /// (measured over the sweep); 0 when there is no model.
  double transfer_regret(const std::string& op, const std::string& device_name, int cc) const;

  /// Every entry of every model, for building the kernels ahead of time.
  struct EntryRef {
    std::string device_name;
    int cc = 0;
    std::string op, variant, config;
  };
  std::vector<EntryRef> entries() const;

  /// Every point of every model (the shapes the models were fitted on).
  struct PointRef {
    std::string device_name;
    int cc = 0;
    std::string op, variant;
    int alignment = 0;
    std::vector<int64_t> shape;
  };
  std::vector<PointRef> points() const;
  size_t models() const { return models_.size(); }

 private:
  struct Variant {
    std::string name;
    // Point lines not parsed yet (the built-in tables only: their text lives as long as the
    // process), parsed once on first use, so a call pays for one variant of one GPU model.
    std::vector<std::pair<std::string_view, int>> pending;  // line, line number
    struct Block {
      std::string_view text;  // whole point lines, each ending in '\n'
      int first_line = 0;
      size_t lines = 0;
    };
    std::vector<Block> blocks;  // "points" blocks not split into lines yet
    std::unique_ptr<std::once_flag> parsed = std::make_unique<std::once_flag>();
    std::vector<std::string> configs;
    std::vector<uint8_t> dims;        // per point, its number of dims
    std::vector<int64_t> shapes;      // per point, kMaxDims values (missing dims: 1)
    std::vector<int> alignments;      // per point
    std::vector<float> alignment_coords;  // per point: log2(alignment), weighted into distances
    std::vector<float> coords;        // per point, kMaxDims values: log2(d + 1)
    // per point, once its times are parsed (null before), per entry: log(ms / point's best ms),
    // the best over the entries and the point's reference (an entry measured where only slow
    // configs ran must not look like the best there); NaN where the entry was not measured.
    // A row per point, allocated when parsed: a first call touches the rows of its few nearest
    // points only, not points x entries of zeroed memory (a megabyte on the H100 table, ~0.4 ms
    // of page faults), and a row never moves once another thread may read it.
    std::vector<std::unique_ptr<float[]>> regrets;
    std::vector<double> references;  // per point: the reference ms (see above), 0 where not given
    // Built-in tables keep each point's times as text until a ranking needs that point (only the
    // nearest few ever are): the first call of a process parses shapes, not ~25k times.
    std::vector<std::string_view> times;  // per point
    std::vector<int> line_nos;            // per point, for errors
    std::unique_ptr<std::mutex> times_mutex = std::make_unique<std::mutex>();
    size_t points() const { return alignments.size(); }
  };
  struct Model {
    std::string device_name, op;
    int cc = 0;
    int neighbours = 5;
    double transfer_regret = 0;
    int feature_sm_count = 0;  // of the GPU the points were measured on
    std::vector<std::pair<std::string, double>> feature_weights;  // name, weight
    std::vector<Variant> variants;
  };
  SelectionModel(std::string_view table, bool lazy);
  // The table's line kinds (fields split at tabs; errors name line_no): each adds to models_.
  Variant& variant_of(std::string_view name, int line_no);
  void add_model(const std::vector<std::string_view>& f, int line_no);
  void add_features(const std::vector<std::string_view>& f, int line_no);
  void add_entry(const std::vector<std::string_view>& f, int line_no);
  const Model* find_model(const std::string& op, const std::string& device_name, int cc) const;
  bool lazy_ = false;
  // The variant with its points parsed (throws Error naming the line of a malformed one).
  static const Variant& ready(const Variant& v, bool lazy);
  // Fills point p's regrets row from its text if still pending; times_mutex held.
  static void parse_times(Variant& v, size_t p);
  // ready's steps: room for every point, one point line read (f, items: buffers reused across
  // lines), and the lines of one "points" block read.
  static void reserve_points(Variant& v);
  static void add_point(Variant& v, std::string_view line, int line_no,
                        std::vector<std::string_view>& f, std::vector<std::string_view>& items);
  static void add_block_points(Variant& v, const Variant::Block& block,
                               std::vector<std::string_view>& f,
                               std::vector<std::string_view>& items);
  // rank's steps. The call's nearest points of a variant: all of them by distance, the nearest
  // window sorted; each entry is judged on its k nearest where it was measured.
  struct Neighbours {
    std::vector<std::pair<float, size_t>> by_distance;  // distance, point
    size_t k = 0, window = 0;
  };
  // Each shape an entry's features are computed at: the call's (SM count, shape) first, then
  // its neighbours' (the measuring GPU's SM count, point shape).
  using ShapesAt = std::vector<std::pair<int, std::vector<int64_t>>>;
  static Neighbours nearest_points(const Model& model, const Variant& v,
                                   const std::vector<int64_t>& shape, int alignment);
  static std::vector<double> feature_weights(const Model& model, const Features* features);
  // Entry e's score on its neighbours (the points' regrets parsed); at and values are buffers
  // reused across entries.
  static Ranked score_entry(const Model& model, const Variant& v, const Neighbours& near, size_t e,
                            const std::vector<int64_t>& shape, const Features* features,
                            const std::vector<double>& weights, ShapesAt& at,
                            std::vector<double>& values);

  std::vector<Model> models_;
};

}  // namespace tuned::cache
