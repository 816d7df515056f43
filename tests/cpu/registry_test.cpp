// The op registry: one list of ops, each entry derived from its op's descriptor.
#include "templates/registry.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace tuned {
namespace {

// One list of ops: each entry is derived from its op's descriptor (templates/registered_op.hpp),
// with the descriptor's optional hooks where it has them and OpFace's defaults where it has not.
TEST(Registry, OneEntryPerOpDerivedFromItsDescriptor) {
  std::set<std::string> names;
  ASSERT_EQ(op_infos().size(), op_registrations().size());
  for (size_t i = 0; i < op_registrations().size(); ++i) {
    const OpRegistration& op = op_registrations()[i];
    EXPECT_TRUE(names.insert(op.name).second) << op.name << " is registered twice";
    EXPECT_NE(op.face, nullptr) << op.name;
    EXPECT_TRUE(op.make_space && op.make_task) << op.name;
    EXPECT_EQ(op_infos()[i].name, op.name);
    EXPECT_EQ(op_infos()[i].rate_unit, op.rate_unit);
  }
  ASSERT_NE(find_op_info("entropy"), nullptr);
  EXPECT_EQ(find_op_info("entropy")->rate_unit, "GB/s");
  EXPECT_EQ(find_op_info("conv"), nullptr);
  // GEMM defines the hooks: its compute types take their layout's data, and it has features.
  const OpFace& gemm = *find_op("gemm").face;
  EXPECT_EQ(gemm.data_variant(5), 1);
  EXPECT_EQ(gemm.selection_feature_names(), (std::vector<std::string>{"padding", "waves"}));
  EXPECT_FALSE(gemm.support_kernels().empty());
  // Transpose defines none: the defaults answer.
  const OpFace& transpose = *find_op("transpose").face;
  EXPECT_EQ(transpose.data_variant(0), 0);
  EXPECT_TRUE(transpose.selection_feature_names().empty());
  EXPECT_TRUE(transpose.describe_config(Config{}).empty());
  // The face reaches the descriptor's problem: entropy's bytes count its input type.
  const OpRegistration& entropy = find_op("entropy");
  const ProblemId f32 = entropy.problem_id("f32", {100, 10, 2, 16}, 1);
  const ProblemId u8 = entropy.problem_id("u8", {100, 10, 2, 16}, 1);
  EXPECT_EQ(entropy.face->operand_bytes(f32), 100u * 10u * (4 + 4));
  EXPECT_EQ(entropy.face->operand_bytes(u8), 100u * 10u * (1 + 4));
}

}  // namespace
}  // namespace tuned
