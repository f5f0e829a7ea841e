// EfficientNet-B0 for ImageNet (torchvision.models.efficientnet_b0): MBConv blocks with
// squeeze-and-excitation and SiLU (built as x * Sigmoid(x)), BatchNorm eps 1e-5 as in
// torchvision's B0 (only the V2 models use 1e-3), Dropout(0.2) before the classifier.
#include <algorithm>
#include <string>

#include "model/zoo/models.h"

namespace dlas::zoo {

namespace {

// torchvision Conv2dNormActivation: "<p>.0" conv, "<p>.1" bn, "<p>.2" SiLU (optional).
std::string conv_bn(GraphBuilder& b, const std::string& p, const std::string& x,
                    const ConvArgs& args, bool activation) {
  std::string y = b.batch_norm(p + ".1", b.conv(p + ".0", x, args));
  return activation ? b.silu(p + ".2", y) : y;
}

// SqueezeExcitation: avgpool - fc1 (1x1 conv) - SiLU - fc2 - Sigmoid, scaling x.
std::string squeeze_excitation(GraphBuilder& b, const std::string& p, const std::string& x,
                               int64_t squeeze) {
  std::string s = b.global_avg_pool(p + ".avgpool", x);
  s = b.silu(p + ".activation", b.conv(p + ".fc1", s, {.out = squeeze, .bias = true}));
  s = b.conv(p + ".fc2", s, {.out = b.channels(x), .bias = true});
  s = b.sigmoid(p + ".scale_activation", s);
  return b.mul(p + ".mul", s, x);
}

// MBConv: [expand 1x1] - depthwise kxk - SE - project 1x1 (+ identity when shapes match;
// stochastic depth is the identity at inference).
std::string mbconv(GraphBuilder& b, const std::string& p, const std::string& x,
                   int64_t expand_ratio, int64_t kernel, int64_t stride, int64_t out) {
  const int64_t in = b.channels(x);
  const int64_t expanded = make_divisible(static_cast<double>(in * expand_ratio));
  int j = 0;
  std::string y = x;
  if (expanded != in) y = conv_bn(b, str(p, ".block.", j++), y, {.out = expanded}, true);
  y = conv_bn(b, str(p, ".block.", j++), y,
              {.out = expanded,
               .kernel = kernel,
               .stride = stride,
               .pad = (kernel - 1) / 2,
               .groups = expanded},
              true);
  y = squeeze_excitation(b, str(p, ".block.", j++), y, std::max<int64_t>(1, in / 4));
  y = conv_bn(b, str(p, ".block.", j++), y, {.out = out}, false);
  if (stride == 1 && in == out) y = b.add(p + ".add", y, x);
  return y;
}

}  // namespace

BuiltModel build_efficientnetb0(const ZooConfig& c) {
  InitScheme init;
  init.conv_weight = InitScheme::ConvWeight::kKaimingNormalFanOut;
  init.conv_bias_zero = true;
  init.linear_weight = InitScheme::LinearWeight::kUniformFanOut;
  init.linear_bias_zero = true;
  GraphBuilder b(c, init);
  auto ch = [&](int64_t n) { return make_divisible(static_cast<double>(n) * c.width_mult); };
  struct Stage {
    int64_t expand_ratio, kernel, stride, out, layers;
  };
  static constexpr Stage kStages[] = {{1, 3, 1, 16, 1}, {6, 3, 2, 24, 2},  {6, 5, 2, 40, 2},
                                      {6, 3, 2, 80, 3}, {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4},
                                      {6, 3, 1, 320, 1}};
  std::string x = b.input();
  x = conv_bn(b, "features.0", x, {.out = ch(32), .kernel = 3, .stride = 2, .pad = 1}, true);
  int s = 1;
  for (const Stage& st : kStages) {
    for (int64_t i = 0; i < st.layers; ++i)
      x = mbconv(b, str("features.", s, ".", i), x, st.expand_ratio, st.kernel,
                 i == 0 ? st.stride : 1, ch(st.out));
    ++s;
  }
  x = conv_bn(b, str("features.", s), x, {.out = 4 * b.channels(x)}, true);
  x = b.global_avg_pool("avgpool", x);
  x = b.flatten("flatten", x);
  // classifier.0 is Dropout(0.2): the identity at inference.
  x = b.linear("classifier.1", x, c.num_classes, "output");
  return finish_model(b, x);
}

}  // namespace dlas::zoo
