// MobileNet (v1) and MobileNetV2 for CIFAR-10 (kuangliu/pytorch-cifar models/mobilenet.py,
// models/mobilenetv2.py) and MobileNetV2 for ImageNet (torchvision.models.mobilenet_v2).
#include <algorithm>
#include <cmath>
#include <string>

#include "model/zoo/models.h"

namespace dlas::zoo {

namespace {

// kuangliu MobileNet Block: depthwise 3x3 - bn - relu - pointwise 1x1 - bn - relu.
std::string v1_block(GraphBuilder& b, const std::string& p, const std::string& x, int64_t out,
                     int64_t stride) {
  const int64_t in = b.channels(x);
  std::string y =
      b.conv(p + ".conv1", x, {.out = in, .kernel = 3, .stride = stride, .pad = 1, .groups = in});
  y = b.relu(p + ".relu", b.batch_norm(p + ".bn1", y));
  y = b.conv(p + ".conv2", y, {.out = out});
  return b.relu(p + ".relu", b.batch_norm(p + ".bn2", y));
}

// kuangliu MobileNetV2 Block: expand 1x1 (always present) - depthwise 3x3 - project 1x1; the
// residual is added whenever stride == 1, through a 1x1 conv + bn when the width changes.
std::string v2_cifar_block(GraphBuilder& b, const std::string& p, const std::string& x, int64_t out,
                           int64_t expansion, int64_t stride) {
  const int64_t in = b.channels(x);
  const int64_t planes = expansion * in;
  std::string y = b.conv(p + ".conv1", x, {.out = planes});
  y = b.relu(p + ".relu", b.batch_norm(p + ".bn1", y));
  y = b.conv(p + ".conv2", y,
             {.out = planes, .kernel = 3, .stride = stride, .pad = 1, .groups = planes});
  y = b.relu(p + ".relu", b.batch_norm(p + ".bn2", y));
  y = b.conv(p + ".conv3", y, {.out = out});
  y = b.batch_norm(p + ".bn3", y);
  if (stride != 1) return y;
  std::string shortcut = x;
  if (in != out) {
    shortcut = b.conv(p + ".shortcut.0", x, {.out = out});
    shortcut = b.batch_norm(p + ".shortcut.1", shortcut);
  }
  return b.add(p + ".add", y, shortcut);
}

// torchvision Conv2dNormActivation with ReLU6: "<p>.0" conv, "<p>.1" bn, "<p>.2" relu6.
std::string conv_bn_relu6(GraphBuilder& b, const std::string& p, const std::string& x,
                          const ConvArgs& args) {
  std::string y = b.conv(p + ".0", x, args);
  return b.relu6(p + ".2", b.batch_norm(p + ".1", y));
}

// torchvision InvertedResidual: [expand 1x1 when t != 1] - depthwise 3x3 - linear 1x1, with
// an identity residual when stride == 1 and the width is unchanged.
std::string inverted_residual(GraphBuilder& b, const std::string& p, const std::string& x,
                              int64_t out, int64_t expand_ratio, int64_t stride) {
  const int64_t in = b.channels(x);
  const int64_t hidden = std::llround(static_cast<double>(in) * static_cast<double>(expand_ratio));
  int j = 0;
  std::string y = x;
  if (expand_ratio != 1) y = conv_bn_relu6(b, str(p, ".conv.", j++), y, {.out = hidden});
  y = conv_bn_relu6(b, str(p, ".conv.", j++), y,
                    {.out = hidden, .kernel = 3, .stride = stride, .pad = 1, .groups = hidden});
  y = b.conv(str(p, ".conv.", j++), y, {.out = out});
  y = b.batch_norm(str(p, ".conv.", j++), y);
  if (stride == 1 && in == out) y = b.add(p + ".add", x, y);
  return y;
}

}  // namespace

BuiltModel build_mobilenetv1_cifar(const ZooConfig& c) {
  GraphBuilder b(c, InitScheme{});
  auto ch = [&](int64_t n) { return scale_channels(n, c.width_mult); };
  struct Row {
    int64_t out, stride;
  };
  static constexpr Row kCfg[] = {{64, 1},  {128, 2},  {128, 1}, {256, 2}, {256, 1},
                                 {512, 2}, {512, 1},  {512, 1}, {512, 1}, {512, 1},
                                 {512, 1}, {1024, 2}, {1024, 1}};
  std::string x = b.input();
  x = b.conv("conv1", x, {.out = ch(32), .kernel = 3, .pad = 1});
  x = b.relu("relu", b.batch_norm("bn1", x));
  int i = 0;
  for (const Row& row : kCfg) x = v1_block(b, str("layers.", i++), x, ch(row.out), row.stride);
  x = b.avg_pool_or_global("avg_pool", x, 2);
  x = b.flatten("flatten", x);
  x = b.linear("linear", x, c.num_classes, "output");
  return finish_model(b, x);
}

BuiltModel build_mobilenetv2_cifar(const ZooConfig& c) {
  GraphBuilder b(c, InitScheme{});
  auto ch = [&](int64_t n) { return scale_channels(n, c.width_mult); };
  struct Row {
    int64_t expansion, out, blocks, stride;
  };
  // Stride 1 (not 2) in the second row and in conv1: kuangliu's CIFAR-10 changes.
  static constexpr Row kCfg[] = {{1, 16, 1, 1}, {6, 24, 2, 1},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  std::string x = b.input();
  x = b.conv("conv1", x, {.out = ch(32), .kernel = 3, .pad = 1});
  x = b.relu("relu", b.batch_norm("bn1", x));
  int i = 0;
  for (const Row& row : kCfg)
    for (int64_t k = 0; k < row.blocks; ++k)
      x = v2_cifar_block(b, str("layers.", i++), x, ch(row.out), row.expansion,
                         k == 0 ? row.stride : 1);
  x = b.conv("conv2", x, {.out = ch(1280)});
  x = b.relu("relu", b.batch_norm("bn2", x));
  x = b.avg_pool_or_global("avg_pool", x, 4);
  x = b.flatten("flatten", x);
  x = b.linear("linear", x, c.num_classes, "output");
  return finish_model(b, x);
}

BuiltModel build_mobilenetv2(const ZooConfig& c) {
  InitScheme init;
  init.conv_weight = InitScheme::ConvWeight::kKaimingNormalFanOut;
  init.conv_bias_zero = true;
  init.linear_weight = InitScheme::LinearWeight::kNormal001;
  init.linear_bias_zero = true;
  GraphBuilder b(c, init);
  struct Row {
    int64_t t, c, n, s;
  };
  static constexpr Row kCfg[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  const int64_t first = make_divisible(32 * c.width_mult);
  const int64_t last = make_divisible(1280 * std::max(1.0, c.width_mult));
  std::string x = b.input();
  x = conv_bn_relu6(b, "features.0", x, {.out = first, .kernel = 3, .stride = 2, .pad = 1});
  int i = 1;
  for (const Row& row : kCfg) {
    const int64_t out = make_divisible(static_cast<double>(row.c) * c.width_mult);
    for (int64_t k = 0; k < row.n; ++k)
      x = inverted_residual(b, str("features.", i++), x, out, row.t, k == 0 ? row.s : 1);
  }
  x = conv_bn_relu6(b, str("features.", i), x, {.out = last});
  x = b.global_avg_pool("avgpool", x);
  x = b.flatten("flatten", x);
  // classifier.0 is Dropout(0.2): the identity at inference.
  x = b.linear("classifier.1", x, c.num_classes, "output");
  return finish_model(b, x);
}

}  // namespace dlas::zoo
