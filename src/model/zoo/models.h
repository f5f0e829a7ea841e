// Internal: the zoo's model families and the uninferred build entry point the tests use to
// check structure and counts without the op schemas.
#pragma once

#include <cstdint>
#include <string_view>

#include "dlas/model/graph.h"
#include "dlas/model/zoo.h"
#include "model/zoo/builder.h"

namespace dlas::zoo {

// A built (not yet inferred) model with the builder's own parameter and MAC counts.
struct BuiltModel {
  Graph graph;
  int64_t trainable_params = 0;
  int64_t macs = 0;
};

// Resolves and validates the options, then builds the model without inferring it.
// Throws kInvalidInput for unknown names or bad options.
BuiltModel build_zoo_graph(std::string_view name, const ZooOptions& options);

// kuangliu/pytorch-cifar (CIFAR-10).
BuiltModel build_resnet18_cifar(const ZooConfig& config);     // resnet.cc
BuiltModel build_mobilenetv1_cifar(const ZooConfig& config);  // mobilenet.cc
BuiltModel build_mobilenetv2_cifar(const ZooConfig& config);  // mobilenet.cc
BuiltModel build_vgg16_cifar(const ZooConfig& config);        // vgg.cc
// torchvision (ImageNet).
BuiltModel build_resnet50(const ZooConfig& config);        // resnet.cc
BuiltModel build_mobilenetv2(const ZooConfig& config);     // mobilenet.cc
BuiltModel build_densenet161(const ZooConfig& config);     // densenet.cc
BuiltModel build_efficientnetb0(const ZooConfig& config);  // efficientnet.cc

// Hands the builder's graph and counts over.
inline BuiltModel finish_model(GraphBuilder& b, const std::string& output) {
  BuiltModel m;
  m.trainable_params = b.trainable_params();
  m.macs = b.macs();
  m.graph = b.finish(output);
  return m;
}

}  // namespace dlas::zoo
