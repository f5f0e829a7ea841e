// DenseNet-161 for ImageNet (torchvision.models.densenet161): growth rate 48, blocks of
// (6, 12, 36, 24) layers, 96 initial features, bottleneck width 4 x growth, transitions that
// halve the channels and average-pool 2x2.
#include <string>
#include <vector>

#include "model/zoo/models.h"

namespace dlas::zoo {

namespace {

// _DenseLayer: concat(all earlier features) - bn - relu - 1x1 conv - bn - relu - 3x3 conv.
std::string dense_layer(GraphBuilder& b, const std::string& p,
                        const std::vector<std::string>& features, int64_t growth, int64_t bn_size) {
  std::string x = features.size() == 1 ? features[0] : b.concat(p + ".cat", features);
  x = b.relu(p + ".relu1", b.batch_norm(p + ".norm1", x));
  x = b.conv(p + ".conv1", x, {.out = bn_size * growth});
  x = b.relu(p + ".relu2", b.batch_norm(p + ".norm2", x));
  return b.conv(p + ".conv2", x, {.out = growth, .kernel = 3, .pad = 1});
}

}  // namespace

BuiltModel build_densenet161(const ZooConfig& c) {
  InitScheme init;
  init.conv_weight = InitScheme::ConvWeight::kKaimingNormalFanIn;
  init.linear_bias_zero = true;
  GraphBuilder b(c, init);
  const int64_t growth = scale_channels(48, c.width_mult);
  const int64_t init_features = scale_channels(96, c.width_mult);
  constexpr int64_t kBnSize = 4;
  constexpr int kBlocks[4] = {6, 12, 36, 24};

  std::string x = b.input();
  x = b.conv("features.conv0", x, {.out = init_features, .kernel = 7, .stride = 2, .pad = 3});
  x = b.relu("features.relu0", b.batch_norm("features.norm0", x));
  x = b.max_pool("features.pool0", x, {.kernel = 3, .stride = 2, .pad = 1});
  for (int i = 0; i < 4; ++i) {
    const std::string block = str("features.denseblock", i + 1);
    std::vector<std::string> features = {x};
    for (int j = 0; j < kBlocks[i]; ++j)
      features.push_back(
          dense_layer(b, str(block, ".denselayer", j + 1), features, growth, kBnSize));
    x = b.concat(block + ".cat", features);
    if (i == 3) break;
    const std::string t = str("features.transition", i + 1);
    x = b.relu(t + ".relu", b.batch_norm(t + ".norm", x));
    x = b.conv(t + ".conv", x, {.out = b.channels(x) / 2});
    x = b.avg_pool(t + ".pool", x, {.kernel = 2, .stride = 2});
  }
  x = b.batch_norm("features.norm5", x);
  x = b.relu("relu", x);
  x = b.global_avg_pool("avgpool", x);
  x = b.flatten("flatten", x);
  x = b.linear("classifier", x, c.num_classes, "output");
  return finish_model(b, x);
}

}  // namespace dlas::zoo
