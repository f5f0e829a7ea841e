// VGG-16 for CIFAR-10 (kuangliu/pytorch-cifar models/vgg.py): 3x3 convs with bias, each
// followed by BatchNorm and ReLU, five 2x2 max pools, a trailing AvgPool(1, 1), one Linear.
#include <string>

#include "model/zoo/models.h"

namespace dlas::zoo {

BuiltModel build_vgg16_cifar(const ZooConfig& c) {
  GraphBuilder b(c, InitScheme{});
  constexpr int64_t kPool = 0;  // 'M' in kuangliu's cfg
  static constexpr int64_t kCfg[] = {64,    64,  kPool, 128, 128,   kPool, 256, 256, 256,
                                     kPool, 512, 512,   512, kPool, 512,   512, 512, kPool};
  std::string x = b.input();
  int i = 0;  // index into the features Sequential
  for (int64_t v : kCfg) {
    if (v == kPool) {
      // A 32x32 image only meets even maps (floor == ceil). On odd maps (e.g. 28x28
      // Fashion-MNIST: 7x7 after three pools) ceil_mode keeps the border row and column, so
      // the five pools still end on a 1x1 map.
      const bool odd = b.height(x) % 2 != 0;
      x = b.max_pool(str("features.", i++), x, {.kernel = 2, .stride = 2, .ceil_mode = odd});
      continue;
    }
    const int64_t out = scale_channels(v, c.width_mult);
    x = b.conv(str("features.", i), x, {.out = out, .kernel = 3, .pad = 1, .bias = true});
    x = b.batch_norm(str("features.", i + 1), x);
    x = b.relu(str("features.", i + 2), x);
    i += 3;
  }
  // The classifier takes the 512 channels of a 1x1 map; larger maps are pooled globally.
  if (b.height(x) == 1 && b.shape(x)[3] == 1)
    x = b.avg_pool(str("features.", i), x, {.kernel = 1, .stride = 1});
  else
    x = b.global_avg_pool(str("features.", i), x);
  x = b.flatten("flatten", x);
  x = b.linear("classifier", x, c.num_classes, "output");
  return finish_model(b, x);
}

}  // namespace dlas::zoo
