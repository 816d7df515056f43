// The GEMMs of network layers as PyTorch hands them to cuBLAS (column-major): a Linear layer
// (in -> out) over T tokens is the forward product TN m=out n=T k=in, the input gradient NN m=in
// n=T k=out and the weight gradient NT m=in n=out k=T; a 3x3 convolution (C_in -> C_out over
// N x H x W pixels, NHWC, im2col) is the Linear layer 9*C_in -> C_out over N*H*W tokens.
//   benchmark_networks(): the public models bench/gemm_networks measures (issue 28). Held out:
//     no shipped entry, fit or test may use their shapes (bench/held_out.hpp).
//   fitting_networks(): other public models, at other token counts, for the selection model's
//     sweep (bench/gemm_sweep --networks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"

namespace tuned::bench {

struct NetworkLayer {
  std::string name;  // "ffn_up"
  int64_t in = 0, out = 0;
};

struct Network {
  std::string model;
  std::vector<NetworkLayer> layers;
  std::vector<int64_t> tokens;         // forward, input and weight gradients at each
  std::vector<int64_t> decode_tokens;  // forward only (autoregressive decoding)
};

/// One GEMM of a network: which model, layer and pass, and its problem.
struct NetworkGemm {
  std::string model, layer, pass;  // pass: "forward", "input_grad", "weight_grad"
  int64_t tokens = 0;
  Shape shape;
};

/// A 3x3 convolution as its im2col Linear layer.
inline NetworkLayer conv3x3(const std::string& name, int64_t c_in, int64_t c_out) {
  return {name, 9 * c_in, c_out};
}

/// Transformer blocks: attention projections, feed-forward up (and gate) and down, and the
/// vocabulary projection where given (vocab 0: none).
inline std::vector<NetworkLayer> transformer(int64_t d, int64_t ffn, int64_t vocab, int64_t kv = 0,
                                             bool fused_qkv = false) {
  std::vector<NetworkLayer> layers;
  if (fused_qkv) {
    layers.push_back({"attn_qkv", d, 3 * d});
    layers.push_back({"attn_out", d, d});
  } else {
    layers.push_back({"attn_q_o", d, d});
    if (kv > 0) layers.push_back({"attn_kv", d, kv});
  }
  layers.push_back({"ffn_up", d, ffn});
  layers.push_back({"ffn_down", ffn, d});
  if (vocab > 0) layers.push_back({"lm_head", d, vocab});
  return layers;
}

inline std::vector<Network> benchmark_networks() {
  const std::vector<int64_t> tokens = {512, 2048, 8192}, decode = {1, 4, 16};
  return {
      {"GPT-2 medium", transformer(1024, 4096, 50257, 0, true), tokens, decode},
      {"GPT-2 large", transformer(1280, 5120, 50257, 0, true), tokens, decode},
      {"Llama-2-13B", transformer(5120, 13824, 32000), tokens, decode},
      {"Mistral-7B", transformer(4096, 14336, 0, 1024), tokens, decode},
      {"T5-large", transformer(1024, 2816, 0), tokens, decode},
  };
}

/// Every GEMM of a network: its layers at each token count in the three passes, then at each
/// decoding token count forward only.
inline std::vector<NetworkGemm> network_gemms(const Network& net) {
  std::vector<NetworkGemm> out;
  for (const auto& layer : net.layers) {
    for (int64_t t : net.tokens) {
      out.push_back({net.model, layer.name, "forward", t, {"TN", layer.out, t, layer.in}});
      out.push_back({net.model, layer.name, "input_grad", t, {"NN", layer.in, t, layer.out}});
      out.push_back({net.model, layer.name, "weight_grad", t, {"NT", layer.in, layer.out, t}});
    }
    for (int64_t t : net.decode_tokens) {
      out.push_back({net.model, layer.name, "forward", t, {"TN", layer.out, t, layer.in}});
    }
  }
  return out;
}

/// A convolutional network's layers, each at its own pixel count (tokens = batch * H * W).
inline std::vector<NetworkGemm> conv_gemms(
    const std::string& model, int64_t batch,
    const std::vector<std::pair<NetworkLayer, int64_t>>& layers_and_sides) {
  std::vector<NetworkGemm> out;
  for (const auto& [layer, side] : layers_and_sides) {
    Network one{model, {layer}, {batch * side * side}, {}};
    for (auto& g : network_gemms(one)) out.push_back(std::move(g));
  }
  return out;
}

/// VGG-16's 3x3 convolutions at batch 32 (the distinct ones: repeated layers give equal GEMMs),
/// each at its own pixel count.
inline std::vector<NetworkGemm> vgg16_gemms() {
  return conv_gemms("VGG-16", 32,
                    {{conv3x3("conv1_1", 3, 64), 224},
                     {conv3x3("conv1_2", 64, 64), 224},
                     {conv3x3("conv2_1", 64, 128), 112},
                     {conv3x3("conv2_2", 128, 128), 112},
                     {conv3x3("conv3_1", 128, 256), 56},
                     {conv3x3("conv3_2", 256, 256), 56},
                     {conv3x3("conv4_1", 256, 512), 28},
                     {conv3x3("conv4_2", 512, 512), 28},
                     {conv3x3("conv5_1", 512, 512), 14}});
}

/// Every GEMM bench/gemm_networks measures: the transformers, then VGG-16.
inline std::vector<NetworkGemm> benchmark_gemms() {
  std::vector<NetworkGemm> out;
  for (const auto& net : benchmark_networks()) {
    for (auto& g : network_gemms(net)) out.push_back(std::move(g));
  }
  for (auto& g : vgg16_gemms()) out.push_back(std::move(g));
  return out;
}

/// Other public models for the selection model's sweep, at token counts the benchmark does not
/// use, and ResNet-50's convolutions at batch 64 (1x1 convolutions are Linear layers).
inline std::vector<NetworkGemm> fitting_gemms() {
  const std::vector<int64_t> tokens = {1024, 4096}, decode = {8};
  const std::vector<Network> nets = {
      {"BERT-base", transformer(768, 3072, 30522, 0, true), {384, 4096, 16384}, decode},
      {"Llama-2-7B", transformer(4096, 11008, 32000), tokens, decode},
      {"Llama-2-70B", transformer(8192, 28672, 0, 1024), {1024}, {2}},
      {"OPT-1.3B", transformer(2048, 8192, 50272, 0, true), tokens, decode},
      {"Falcon-7B", transformer(4544, 18176, 0, 0, true), {1000, 3000}, {32}},
      {"Phi-2", transformer(2560, 10240, 51200, 0, true), tokens, decode},
      {"ViT-B/16", transformer(768, 3072, 0, 0, true), {197 * 32, 197 * 128}, {}},
  };
  std::vector<NetworkGemm> out;
  for (const auto& net : nets) {
    for (auto& g : network_gemms(net)) out.push_back(std::move(g));
  }
  const NetworkLayer c1x1_64_256{"conv1x1", 64, 256}, c1x1_256_64{"conv1x1", 256, 64},
      c1x1_256_128{"conv1x1", 256, 128}, c1x1_512_128{"conv1x1", 512, 128},
      c1x1_1024_256{"conv1x1", 1024, 256}, c1x1_256_1024{"conv1x1", 256, 1024},
      c1x1_2048_512{"conv1x1", 2048, 512};
  for (auto& g : conv_gemms("ResNet-50", 64,
                            {{c1x1_64_256, 56},
                             {c1x1_256_64, 56},
                             {conv3x3("conv2_3x3", 64, 64), 56},
                             {c1x1_256_128, 56},
                             {conv3x3("conv3_3x3", 128, 128), 28},
                             {c1x1_512_128, 28},
                             {conv3x3("conv4_3x3", 256, 256), 14},
                             {c1x1_1024_256, 14},
                             {c1x1_256_1024, 14},
                             {conv3x3("conv5_3x3", 512, 512), 7},
                             {c1x1_2048_512, 7}})) {
    out.push_back(std::move(g));
  }
  return out;
}

/// A second fitting set (gemm_sweep --more-networks), where the first left the model far from the
/// layers users run: the same models at other token counts and decoding steps (aligned products
/// with n of 1 to 12 and of a few hundred), and convolutions whose weight gradients have k in the
/// hundreds of thousands (ResNet-50's 7x7 stem and 3x3 layers at batch 128, AlexNet-like stems).
inline std::vector<NetworkGemm> fitting_gemms_more() {
  const std::vector<int64_t> tokens = {256, 640}, decode = {1, 3, 12};
  const std::vector<Network> nets = {
      {"BERT-base", transformer(768, 3072, 30522, 0, true), {640}, decode},
      // Not decoding 1 token: its 4096 x 4096 projection is Mistral-7B's (a benchmark layer).
      {"Llama-2-7B", transformer(4096, 11008, 32000), tokens, {3, 12}},
      {"OPT-1.3B", transformer(2048, 8192, 50272, 0, true), tokens, decode},
      {"Falcon-7B", transformer(4544, 18176, 0, 0, true), {256}, decode},
      {"Phi-2", transformer(2560, 10240, 51200, 0, true), tokens, decode},
      {"Llama-2-70B", transformer(8192, 28672, 0, 1024), {}, {1, 3}},
  };
  // Convolutions first: a sweep cut short by its time bound still covers them.
  std::vector<NetworkGemm> out;
  for (auto& g : conv_gemms("ResNet-50", 128,
                            {{NetworkLayer{"conv1_7x7", 147, 64}, 112},
                             {conv3x3("conv2_3x3", 64, 64), 56},
                             {conv3x3("conv3_3x3", 128, 128), 28},
                             {conv3x3("conv4_3x3", 256, 256), 14}})) {
    out.push_back(std::move(g));
  }
  for (auto& g : conv_gemms("AlexNet-like", 64,
                            {{NetworkLayer{"conv1_11x11", 363, 96}, 55},
                             {NetworkLayer{"conv2_5x5", 2400, 256}, 27}})) {
    out.push_back(std::move(g));
  }
  for (const auto& net : nets) {
    for (auto& g : network_gemms(net)) out.push_back(std::move(g));
  }
  return out;
}

/// A third fitting set (gemm_sweep --decode-networks): decoding steps of 16 to 32 tokens of the
/// fitting models, aligned forward products with n of 16-32 and k up to 28672. The second set's
/// decoding stops at 12 tokens, where the matrix-vector kernel still wins; from 16 tokens on, the
/// register tiles with vector loads and split k do, and no fitting point said so (in diagnosis:
/// Mistral-7B's ffn_down at 16 tokens, a benchmark layer, ran 0.89x cuBLAS on a scalar-load pick
/// where autotune found 1.35x).
inline std::vector<NetworkGemm> fitting_gemms_decode() {
  const std::vector<int64_t> decode = {16, 24, 32};
  // Llama-2-7B's 4096 x 4096 projection at 16 tokens is Mistral-7B's (a benchmark layer).
  std::vector<NetworkLayer> llama_7b_16 = transformer(4096, 11008, 32000);
  llama_7b_16.erase(llama_7b_16.begin());
  const std::vector<Network> nets = {
      {"Llama-2-7B", transformer(4096, 11008, 32000), {}, {24, 32}},
      {"Llama-2-7B", llama_7b_16, {}, {16}},
      {"OPT-1.3B", transformer(2048, 8192, 50272, 0, true), {}, decode},
      {"Falcon-7B", transformer(4544, 18176, 0, 0, true), {}, decode},
      {"Phi-2", transformer(2560, 10240, 51200, 0, true), {}, decode},
      {"Llama-2-70B", transformer(8192, 28672, 0, 1024), {}, decode},
  };
  std::vector<NetworkGemm> out;
  for (const auto& net : nets) {
    for (auto& g : network_gemms(net)) out.push_back(std::move(g));
  }
  return out;
}

/// A fourth fitting set (gemm_sweep --vocab-networks): the vocabulary projections of models whose
/// vocabulary is not a multiple of 4, so the logits' and their gradients' leading dimension is
/// odd or even but unaligned: every pass at training token counts and the forward product
/// decoding 8-24 tokens. The other sets' vocabularies are all multiples of 4, so nothing told the
/// model that a product whose C alone is unaligned copies nothing, or what packing an unaligned
/// gradient costs beside a wgmma tile (in diagnosis: GPT-2's lm_head, a benchmark layer, ran
/// 0.88x at 16 tokens and 0.98x in its weight gradient on picks judged from aligned points).
inline std::vector<NetworkGemm> fitting_gemms_vocab() {
  const std::vector<int64_t> tokens = {256, 1024, 3072}, decode = {8, 16, 24};
  const auto head = [](int64_t d, int64_t vocab) {
    return std::vector<NetworkLayer>{{"lm_head", d, vocab}};
  };
  const std::vector<Network> nets = {
      {"RoBERTa-base", head(768, 50265), tokens, decode},
      {"RoBERTa-large", head(1024, 50265), tokens, decode},
      {"Whisper-medium", head(1024, 51865), tokens, decode},
      {"Whisper-large-v3", head(1280, 51866), tokens, decode},
      {"XLM-R-base", head(768, 250002), {256, 1024}, decode},
  };
  std::vector<NetworkGemm> out;
  for (const auto& net : nets) {
    for (auto& g : network_gemms(net)) out.push_back(std::move(g));
  }
  return out;
}

}  // namespace tuned::bench
