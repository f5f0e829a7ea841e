// A Variant: one point of the stack -- model x compression x algorithm choice x
// schedule x target (ISA, threads) x batch x backend. Every bench row and study
// row is one; its canonical string is stable across runs and machines and its
// hash (FNV-1a 64 of the string) keys results.
#pragma once

#include <cstdint>
#include <string>

namespace dlas {

struct Variant {
  std::string model;  // zoo name or .onnx path
  int64_t batch = 1;
  std::string compress = "dense";    // --compress SPEC: dense, wp:0.9, cp:0.5, int8, ...
  std::string backend = "dlas";      // dlas | onednn | cudnn | reference | torch | a peer
  // Where it runs: "cpu" or "cuda:N" (dlas/hw/gpu.h canonical_device). Part of str() only
  // when not cpu, so older ids are unchanged.
  std::string device = "cpu";
  std::string conv_algo = "auto";    // or a per-layer file: "layers:<path>"
  // Activation layout mode (PlanOptions::layout): auto | nchw | nchwc. Part of str() only
  // when not auto, so older ids are unchanged.
  std::string layout = "auto";
  std::string schedule = "default";  // default (untuned) | tuned:<records>
  int opt_level = 3;
  std::string isa;            // scalar | avx2 | avx512 ...; on a GPU its architecture (sm_90)
  bool isa_emulated = false;  // forced below what the CPU has
  int threads = 1;
  // Labelled dataset the model is built for and scored on ("fashion-mnist"); empty: none
  // (latency only). Part of str() only when set, so older ids are unchanged.
  std::string dataset;
  // With a dataset: the test images scored (0: the whole split). Part of str() only with a
  // dataset -- accuracy on 200 images is another measurement than on 10,000.
  int64_t accuracy_limit = 0;
  // With a dataset: the preprocessing flags the variant feeds it with, in canonical form
  // ("--mean 0.5 --std 0.25"; PreprocessFlags::to_args); empty: the model's metadata, else
  // the dataset's default. Part of str() only when set.
  std::string preprocess;

  // "model=resnet18-cifar;batch=1;compress=dense;backend=dlas;conv=auto;schedule=default;
  //  opt=3;isa=avx2;threads=2" (+ ";emulated" when the ISA was forced lower, ";device=cuda:0"
  //  on a GPU, then
  //  ";dataset=NAME;limit=N" when a dataset is set, then ";preprocess=FLAGS" when set).
  std::string str() const;
  uint64_t hash() const;
  std::string hash_hex() const;  // 16 hex digits
};

}  // namespace dlas
