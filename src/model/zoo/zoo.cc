// The zoo's table and its public entry points.
#include <cmath>
#include <string>

#include "dlas/model/zoo.h"
#include "model/zoo/models.h"

namespace dlas {

namespace {

struct ZooModel {
  ZooEntry entry;
  zoo::BuiltModel (*build)(const zoo::ZooConfig&);
};

const std::vector<ZooModel>& zoo_table() {
  static const std::vector<ZooModel> table = {
      {{"resnet18-cifar", "cifar10", "ResNet-18, kuangliu/pytorch-cifar models/resnet.py", 3, 32,
        10},
       zoo::build_resnet18_cifar},
      {{"mobilenetv1-cifar", "cifar10", "MobileNet, kuangliu/pytorch-cifar models/mobilenet.py", 3,
        32, 10},
       zoo::build_mobilenetv1_cifar},
      {{"mobilenetv2-cifar", "cifar10", "MobileNetV2, kuangliu/pytorch-cifar models/mobilenetv2.py",
        3, 32, 10},
       zoo::build_mobilenetv2_cifar},
      {{"vgg16-cifar", "cifar10", "VGG-16 with BatchNorm, kuangliu/pytorch-cifar models/vgg.py", 3,
        32, 10},
       zoo::build_vgg16_cifar},
      {{"resnet50", "imagenet", "ResNet-50 (v1.5), torchvision.models.resnet50", 3, 224, 1000},
       zoo::build_resnet50},
      {{"mobilenetv2", "imagenet", "MobileNetV2, torchvision.models.mobilenet_v2", 3, 224, 1000},
       zoo::build_mobilenetv2},
      {{"densenet161", "imagenet", "DenseNet-161, torchvision.models.densenet161", 3, 224, 1000},
       zoo::build_densenet161},
      {{"efficientnetb0", "imagenet", "EfficientNet-B0, torchvision.models.efficientnet_b0", 3, 224,
        1000},
       zoo::build_efficientnetb0},
  };
  return table;
}

const ZooModel* find_model(std::string_view name) {
  for (const ZooModel& m : zoo_table())
    if (m.entry.name == name) return &m;
  return nullptr;
}

std::string model_names() {
  std::string s;
  for (const ZooModel& m : zoo_table()) s += (s.empty() ? "" : ", ") + m.entry.name;
  return s;
}

// Fills in the model's defaults and rejects options no model can be built with.
zoo::ZooConfig resolve(const ZooEntry& e, const ZooOptions& o) {
  // Far beyond any real use; keeps the weights of a mistyped option from filling memory.
  constexpr double kMaxWidthMult = 16.0;
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  auto pick = [&](const char* field, int64_t value, int64_t fallback) {
    if (value == -1) return fallback;
    if (value < 1 || value > kMaxDim)
      fail(ErrorKind::kInvalidInput, e.name, ": ", field, " must be between 1 and ", kMaxDim,
           " (or -1 for the default), got ", value);
    return value;
  };
  zoo::ZooConfig c;
  c.model = e.name;
  c.in_channels = pick("in_channels", o.in_channels, e.in_channels);
  c.image_size = pick("image_size", o.image_size, e.image_size);
  c.num_classes = pick("num_classes", o.num_classes, e.num_classes);
  DLAS_CHECK(o.batch >= 1 && o.batch <= kMaxDim, ErrorKind::kInvalidInput, e.name,
             ": batch must be between 1 and ", kMaxDim, ", got ", o.batch);
  c.batch = o.batch;
  DLAS_CHECK(std::isfinite(o.width_mult) && o.width_mult > 0 && o.width_mult <= kMaxWidthMult,
             ErrorKind::kInvalidInput, e.name, ": width_mult must be in (0, ", kMaxWidthMult,
             "], got ", o.width_mult);
  c.width_mult = o.width_mult;
  c.seed = o.seed;
  return c;
}

}  // namespace

const std::vector<ZooEntry>& zoo_models() {
  static const std::vector<ZooEntry> entries = [] {
    std::vector<ZooEntry> v;
    for (const ZooModel& m : zoo_table()) v.push_back(m.entry);
    return v;
  }();
  return entries;
}

const ZooEntry* find_zoo_model(std::string_view name) {
  for (const ZooEntry& e : zoo_models())
    if (e.name == name) return &e;
  return nullptr;
}

namespace zoo {

BuiltModel build_zoo_graph(std::string_view name, const ZooOptions& options) {
  const ZooModel* m = find_model(name);
  if (!m)
    fail(ErrorKind::kInvalidInput, "unknown zoo model '", name, "'; known models: ", model_names());
  return m->build(resolve(m->entry, options));
}

}  // namespace zoo

Graph build_zoo_model(std::string_view name, const ZooOptions& options) {
  Graph g = zoo::build_zoo_graph(name, options).graph;
  g.infer();
  return g;
}

}  // namespace dlas
