#include "algo/conv_tester.h"

namespace dlas::test {

std::vector<ConvProblem> generated_conv_problems() {
  std::vector<ConvProblem> out;
  auto add = [&](int64_t n, int64_t c, int64_t k, int64_t h, int64_t w, int64_t kh, int64_t kw,
                 int64_t s, int64_t pad, int64_t d, int64_t g) {
    ConvProblem p;
    p.n = n, p.c = c, p.k = k, p.h = h, p.w = w, p.kh = kh, p.kw = kw;
    p.stride_h = p.stride_w = s;
    p.pad_t = p.pad_l = p.pad_b = p.pad_r = pad;
    p.dil_h = p.dil_w = d;
    p.groups = g;
    p.has_bias = true;
    out.push_back(p);
  };
  // clang-format off
  //  n  c   k   h   w  kh kw s pad d g
  add(1, 3, 16, 32, 32, 3, 3, 1, 1, 1, 1);   // a CIFAR stem
  add(1, 16, 16, 9, 11, 3, 3, 1, 1, 1, 1);   // odd sizes
  add(1, 17, 23, 8, 8, 3, 3, 1, 1, 1, 1);    // channels not divisible by any vector width
  add(1, 32, 40, 15, 13, 3, 3, 2, 1, 1, 1);  // stride 2, odd input
  add(2, 8, 12, 10, 10, 3, 3, 1, 1, 1, 1);   // batch 2
  add(1, 24, 20, 7, 9, 1, 1, 1, 0, 1, 1);    // 1x1
  add(1, 24, 36, 12, 12, 1, 1, 2, 0, 1, 1);  // 1x1 stride 2 (ResNet downsample)
  add(1, 6, 10, 13, 12, 5, 5, 1, 2, 1, 1);   // 5x5
  add(1, 3, 16, 23, 21, 7, 7, 2, 3, 1, 1);   // 7x7 stride 2 (ImageNet stem)
  add(1, 8, 8, 12, 12, 3, 3, 1, 2, 2, 1);    // dilation 2
  add(1, 12, 18, 9, 9, 3, 3, 1, 1, 1, 3);    // groups 3
  add(1, 16, 16, 11, 11, 3, 3, 1, 1, 1, 16); // depthwise
  add(1, 20, 20, 14, 14, 3, 3, 2, 1, 1, 20); // depthwise stride 2
  add(1, 13, 13, 9, 9, 5, 5, 1, 2, 1, 13);   // depthwise 5x5 (EfficientNet)
  add(1, 8, 16, 7, 7, 3, 3, 1, 1, 1, 8);     // depthwise multiplier 2
  add(1, 33, 65, 5, 5, 3, 3, 1, 0, 1, 1);    // no padding, K tail
  add(1, 64, 64, 4, 4, 3, 3, 1, 1, 1, 1);    // small spatial (ResNet-18 CIFAR late layers)
  add(1, 64, 96, 9, 10, 3, 3, 1, 1, 1, 2);   // groups of whole 16- and 8-channel blocks (RegNet)
  add(1, 32, 32, 10, 9, 3, 3, 2, 1, 1, 2);   // the same at stride 2
  add(1, 32, 32, 9, 9, 3, 3, 1, 1, 1, 4);    // 8-channel groups (regnet_y): within a 16-lane block
  add(1, 5, 7, 6, 18, 3, 1, 1, 0, 1, 1);     // non-square kernel
  // clang-format on
  out.back().pad_l = out.back().pad_r = 0, out.back().pad_t = 1, out.back().pad_b = 2;
  return out;
}

}  // namespace dlas::test
