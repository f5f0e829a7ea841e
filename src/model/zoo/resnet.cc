// ResNet-18 for CIFAR-10 (kuangliu/pytorch-cifar models/resnet.py) and ResNet-50
// (torchvision.models.resnet50, the v1.5 variant: stride on the 3x3 conv).
#include <string>

#include "model/zoo/models.h"

namespace dlas::zoo {

namespace {

// kuangliu BasicBlock: conv3x3-bn-relu-conv3x3-bn, + shortcut (1x1 conv + bn when the shape
// changes), relu.
std::string basic_block(GraphBuilder& b, const std::string& p, const std::string& x, int64_t planes,
                        int64_t stride) {
  std::string y = b.conv(p + ".conv1", x, {.out = planes, .kernel = 3, .stride = stride, .pad = 1});
  y = b.relu(p + ".relu", b.batch_norm(p + ".bn1", y));
  y = b.conv(p + ".conv2", y, {.out = planes, .kernel = 3, .pad = 1});
  y = b.batch_norm(p + ".bn2", y);
  std::string shortcut = x;
  if (stride != 1 || b.channels(x) != planes) {
    shortcut = b.conv(p + ".shortcut.0", x, {.out = planes, .stride = stride});
    shortcut = b.batch_norm(p + ".shortcut.1", shortcut);
  }
  return b.relu(p + ".relu", b.add(p + ".add", y, shortcut));
}

// torchvision Bottleneck: 1x1 - 3x3 (stride) - 1x1 (x4), downsample when the shape changes.
std::string bottleneck(GraphBuilder& b, const std::string& p, const std::string& x, int64_t planes,
                       int64_t stride) {
  const int64_t out = planes * 4;
  std::string y = b.conv(p + ".conv1", x, {.out = planes});
  y = b.relu(p + ".relu", b.batch_norm(p + ".bn1", y));
  y = b.conv(p + ".conv2", y, {.out = planes, .kernel = 3, .stride = stride, .pad = 1});
  y = b.relu(p + ".relu", b.batch_norm(p + ".bn2", y));
  y = b.conv(p + ".conv3", y, {.out = out});
  y = b.batch_norm(p + ".bn3", y);
  std::string identity = x;
  if (stride != 1 || b.channels(x) != out) {
    identity = b.conv(p + ".downsample.0", x, {.out = out, .stride = stride});
    identity = b.batch_norm(p + ".downsample.1", identity);
  }
  return b.relu(p + ".relu", b.add(p + ".add", y, identity));
}

}  // namespace

BuiltModel build_resnet18_cifar(const ZooConfig& c) {
  GraphBuilder b(c, InitScheme{});  // PyTorch default init throughout
  auto ch = [&](int64_t n) { return scale_channels(n, c.width_mult); };
  std::string x = b.input();
  x = b.conv("conv1", x, {.out = ch(64), .kernel = 3, .pad = 1});
  x = b.relu("relu", b.batch_norm("bn1", x));
  const int64_t planes[4] = {64, 128, 256, 512};
  for (int layer = 0; layer < 4; ++layer) {
    for (int block = 0; block < 2; ++block) {
      const int64_t stride = (layer > 0 && block == 0) ? 2 : 1;
      x = basic_block(b, str("layer", layer + 1, ".", block), x, ch(planes[layer]), stride);
    }
  }
  x = b.avg_pool_or_global("avg_pool", x, 4);
  x = b.flatten("flatten", x);
  x = b.linear("linear", x, c.num_classes, "output");
  return finish_model(b, x);
}

BuiltModel build_resnet50(const ZooConfig& c) {
  InitScheme init;
  init.conv_weight = InitScheme::ConvWeight::kKaimingNormalFanOut;  // fc keeps the default
  GraphBuilder b(c, init);
  auto ch = [&](int64_t n) { return scale_channels(n, c.width_mult); };
  std::string x = b.input();
  x = b.conv("conv1", x, {.out = ch(64), .kernel = 7, .stride = 2, .pad = 3});
  x = b.relu("relu", b.batch_norm("bn1", x));
  x = b.max_pool("maxpool", x, {.kernel = 3, .stride = 2, .pad = 1});
  const int64_t planes[4] = {64, 128, 256, 512};
  const int blocks[4] = {3, 4, 6, 3};
  for (int layer = 0; layer < 4; ++layer) {
    for (int block = 0; block < blocks[layer]; ++block) {
      const int64_t stride = (layer > 0 && block == 0) ? 2 : 1;
      x = bottleneck(b, str("layer", layer + 1, ".", block), x, ch(planes[layer]), stride);
    }
  }
  x = b.global_avg_pool("avgpool", x);
  x = b.flatten("flatten", x);
  x = b.linear("fc", x, c.num_classes, "output");
  return finish_model(b, x);
}

}  // namespace dlas::zoo
