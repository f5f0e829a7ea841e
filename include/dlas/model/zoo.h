// The model zoo (DLAS layer 2): the CNNs of the DLAS paper, built as dlas graphs
// that match the reference PyTorch definitions (kuangliu/pytorch-cifar for
// CIFAR-10, torchvision for ImageNet) in topology and parameter count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/model/graph.h"

namespace dlas {

struct ZooOptions {
  int64_t batch = 1;
  int64_t in_channels = -1;  // -1: the model's default (3)
  int64_t image_size = -1;   // -1: the model's default (32 for CIFAR, 224 for ImageNet)
  int64_t num_classes = -1;  // -1: the model's default (10 or 1000)
  double width_mult = 1.0;   // scales every layer's channel count
  uint64_t seed = 0;         // deterministic initialisation (PyTorch's init schemes)
};

struct ZooEntry {
  std::string name;         // "resnet18-cifar"
  std::string dataset;      // "cifar10" or "imagenet"
  std::string description;  // one line: source of the definition
  int64_t in_channels, image_size, num_classes;
};

const std::vector<ZooEntry>& zoo_models();
const ZooEntry* find_zoo_model(std::string_view name);  // nullptr when unknown
// Builds and infers the model. Throws kInvalidInput for unknown names or bad options.
Graph build_zoo_model(std::string_view name, const ZooOptions& options = {});

}  // namespace dlas
