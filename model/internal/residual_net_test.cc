// The LibTorch network's blocks and parameters (model/internal/residual_net.h).
#include "model/internal/residual_net.h"

#include <ATen/core/grad_mode.h>
#include <torch/utils.h>

#include <set>
#include <string>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace zf::model::internal {
namespace {

// Output of `block` at the top-left cell, for an input whose bottom-right cell is `far`.
torch::Tensor CornerOutput(ResidualBlock& block, const torch::Tensor& base, float far) {
  torch::Tensor x = base.clone();
  x.index_put_({0, torch::indexing::Slice(), 8, 8}, far);
  return block(x).index({0, torch::indexing::Slice(), 0, 0});
}

// Two 3x3 convolutions see 5x5 cells: the top-left cell of a 9x9 board cannot see the
// bottom-right one, unless the block pools over the whole board.
TEST(ResidualBlockTest, OnlyAPoolingBlockSeesTheFarCorner) {
  at::NoGradGuard no_grad;
  torch::manual_seed(7);
  const torch::Tensor base = torch::rand({1, 8, 9, 9});
  ResidualBlock plain(8, /*global_pooling=*/false);
  ResidualBlock pooling(8, /*global_pooling=*/true);
  plain->eval();
  pooling->eval();
  EXPECT_TRUE(torch::equal(CornerOutput(plain, base, 0), CornerOutput(plain, base, 50)));
  EXPECT_FALSE(torch::allclose(CornerOutput(pooling, base, 0), CornerOutput(pooling, base, 50)));
}

TEST(ResidualNetTest, GlobalPoolingParametersAreInEverySecondBlockFromTheLast) {
  NetworkShape shape{.input_channels = 3,
                     .board_height = 5,
                     .board_width = 5,
                     .num_actions = 26,
                     .blocks = 4,
                     .filters = 8,
                     .value_hidden = 8,
                     .global_pooling = true};
  ASSERT_OK_AND_ASSIGN(auto net, CreateNetwork(shape, 3));
  std::set<std::string> pooling;
  for (const auto& item : net->named_parameters()) {
    if (item.key().find("gpool_fc") != std::string::npos) pooling.insert(item.key());
  }
  EXPECT_EQ(pooling, (std::set<std::string>{"block1.gpool_fc.weight", "block3.gpool_fc.weight"}));
  EXPECT_EQ(net->named_parameters()["block3.gpool_fc.weight"].sizes(),
            (std::vector<int64_t>{8, 16}));

  // The network runs and is deterministic in its seed.
  at::NoGradGuard no_grad;
  net->eval();
  ASSERT_OK_AND_ASSIGN(auto again, CreateNetwork(shape, 3));
  again->eval();
  const torch::Tensor input = torch::rand({2, 3, 5, 5});
  const NetworkOutput a = Forward(*net, input);
  const NetworkOutput b = Forward(*again, input);
  EXPECT_EQ(a.policy_logits.sizes(), (std::vector<int64_t>{2, 26}));
  EXPECT_TRUE(torch::equal(a.policy_logits, b.policy_logits));
  EXPECT_TRUE(torch::equal(a.wdl_logits, b.wdl_logits));
}

}  // namespace
}  // namespace zf::model::internal
