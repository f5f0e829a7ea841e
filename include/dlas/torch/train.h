// Training and fine-tuning (DLAS layer 2) with libtorch on the dlas graph itself.
//
// A Trainer turns a float32 Graph (zoo model or imported ONNX, BatchNormalization nodes not
// folded) into libtorch tensors and interprets it node by node with ATen operators under
// autograd: Conv/Gemm/MatMul weights and biases and BatchNorm scale/bias are trainable
// parameters; BatchNorm runs in training mode (batch statistics, running mean/var updated
// with PyTorch's momentum 0.1) while training and in eval mode (running statistics) for
// validation. The loss is cross-entropy on the logits (the graph's first output).
//
//   dlas::Trainer trainer(graph, {.epochs = 5, .lr = 0.1});
//   trainer.fit(*dlas::data::open_dataset("fashion-mnist", dlas::data::Split::kTrain));
//   dlas::Graph trained = trainer.graph();  // parameters and running stats written back
//
// Optimiser: SGD with momentum and weight decay on every parameter (PyTorch's torch.optim.SGD
// formula), the learning rate following a 1cycle or cosine-annealing schedule stepped once per
// batch. Pruned weights stay exactly zero: a Conv/Gemm/MatMul weight that has zeros when the
// trainer is built (or that has an explicit mask) is multiplied by its mask after every step,
// and its gradient and momentum are masked too.
//
// Deterministic given (seed, threads): the data order and augmentation come from the Loader's
// seed, libtorch runs with deterministic algorithms on `threads` threads. A checkpoint (every
// epoch, and when `stop` is raised) holds parameters, running statistics, momentum buffers,
// epoch, step and the schedule; resuming from it continues exactly as the uninterrupted run
// (bit for bit at one thread).
//
// This header includes no torch header; the implementation is in src/torch/train/ (target
// dlas_torch, built with -DDLAS_WITH_TORCH=ON).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dlas/data/dataset.h"
#include "dlas/model/graph.h"

namespace dlas {

enum class LrSchedule {
  kOneCycle,  // PyTorch OneCycleLR: pct_start 0.3, div_factor 25, final_div_factor 1e4, cosine
  kCosine,    // CosineAnnealingLR from lr to 0 over all steps
  kConstant,
};
const char* lr_schedule_name(LrSchedule s);
// "onecycle", "cosine", "constant"; kInvalidInput otherwise.
LrSchedule parse_lr_schedule(const std::string& name);
// The learning rate at 0-based `step` of `total_steps` (lr: the peak / base rate).
double scheduled_lr(LrSchedule s, double lr, int64_t step, int64_t total_steps);

struct TrainProgress {
  int epoch = 0;     // 0-based
  int epochs = 0;    // epochs this run touches: ceil(total_steps / steps_per_epoch)
  int64_t step = 0;  // batches done in this epoch
  int64_t steps_per_epoch = 0;
  int64_t global_step = 0;  // batches done in all epochs
  int64_t total_steps = 0;
  double loss = 0;      // running mean over this epoch
  double accuracy = 0;  // running top-1 over this epoch (training mode)
  double lr = 0;
  double images_per_second = 0;  // over this run (excluding resumed work)
  double eta_seconds = 0;
  bool epoch_done = false;
};

struct EpochStats {
  int epoch = 0;
  double loss = 0, accuracy = 0, seconds = 0;
  int64_t samples = 0;
};

struct TrainOptions {
  // Fractions allowed (2.5): the run covers round(epochs x steps per epoch) steps, the schedule
  // spans exactly those, and a last partial epoch is reported in TrainResult::epochs like the
  // others (with its samples) but not counted in epochs_done. kInvalidInput when it rounds to 0.
  double epochs = 1;
  int64_t batch = 128;
  double lr = 0.05;  // the peak rate (onecycle) or the starting rate (cosine, constant)
  LrSchedule schedule = LrSchedule::kOneCycle;
  double momentum = 0.9;
  double weight_decay = 5e-4;
  double bn_momentum = 0.1;  // PyTorch's convention: running = (1 - m) running + m batch
  // Cross entropy with label smoothing S in [0, 1) (PyTorch's label_smoothing): the target puts
  // 1 - S on the label and S / classes on every class.
  double label_smoothing = 0;
  int threads = 1;  // libtorch intra-op threads
  // Activations and conv weights in NHWC inside libtorch (oneDNN's faster layout, ~1.4x on
  // AVX2); the graph and checkpoints stay NCHW.
  bool channels_last = true;
  uint64_t seed = 0;            // data order and augmentation
  int64_t limit = 0;            // training records (0: the whole split)
  bool augment = true;          // the dataset's random crop / flip
  data::Preprocess preprocess;  // applied to training images (the CLI uses default_preprocess)
  // > 0: stop after this many steps (batches) in all, mid-epoch if need be -- a fraction of
  // an epoch (prune-sweep shares its fine-tuning epochs across levels). The schedule then
  // spans min(round(epochs x steps per epoch), max_steps) steps; a cut epoch is reported in
  // TrainResult::epochs (fewer samples) but not counted in epochs_done.
  int64_t max_steps = 0;
  // Pruning masks: weights with zeros at construction keep them (mask = weight != 0), and
  // explicit masks (initializer name -> 0/1 tensor of the weight's shape) take precedence.
  bool masks_from_zeros = true;
  std::map<std::string, Tensor> masks;
  // Checkpoint file ("" = none): written after every epoch and when `stop` is raised.
  std::string checkpoint;
  bool resume = false;        // continue from `checkpoint` (kInvalidInput when missing)
  int stop_after_epochs = 0;  // > 0: return after this many epochs of this call
  const std::atomic<bool>* stop = nullptr;  // raised (e.g. by SIGINT): checkpoint and return
  std::function<void(const TrainProgress&)> on_progress;  // after every batch
};

struct TrainResult {
  std::vector<EpochStats> epochs;  // those run by this call
  int64_t global_step = 0;         // batches done in all (including resumed) epochs
  int epochs_done = 0;             // epochs complete (including resumed ones)
  bool stopped = false;            // interrupted by `stop` or stop_after_epochs
  double seconds = 0;
};

// The ONNX ops a Trainer can interpret (everything the libtorch peer maps, BatchNormalization
// in training mode), sorted.
const std::vector<std::string>& trainable_ops();
// True when every node can be trained through; otherwise *why names the first node at fault.
bool trainer_supports(const Graph& graph, std::string* why = nullptr);

class Trainer {
 public:
  // `graph` must be inferred, float32, with one image input [N,C,H,W] and logits [N,classes]
  // as its first output. kUnsupported naming the node otherwise.
  Trainer(Graph graph, TrainOptions options);
  ~Trainer();
  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;

  // Trains (or resumes and finishes) the configured epochs on `train`.
  TrainResult fit(const data::Dataset& train);
  // One SGD step on a batch at learning rate lr; returns the loss (the batch's mean).
  double train_step(const Tensor& images, const std::vector<int>& labels, double lr);
  // Logits for a batch [N,C,H,W]: BatchNorm in training mode (batch statistics, running
  // statistics updated) when `training`, else eval mode. No gradients are kept.
  Tensor forward(const Tensor& images, bool training);
  // Eval-mode top-1 (and top-5) of the current parameters on a dataset, with libtorch.
  data::Accuracy evaluate(const data::Dataset& ds, const data::Preprocess& pre, int64_t batch,
                          int64_t limit = 0);

  // The graph with the current parameters and running statistics as its initializers.
  Graph graph() const;
  // Parameter initializer names (requires_grad), in graph order.
  std::vector<std::string> parameter_names() const;
  // Names of the weights that carry a pruning mask.
  std::vector<std::string> masked_names() const;
  int64_t global_step() const;
  int epochs_done() const;

  void save_checkpoint(const std::string& path) const;  // temp file + rename
  void load_checkpoint(const std::string& path);        // kInvalidInput naming the file

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Top-1/top-5 of a graph on a dataset computed by the dlas engine (a compiled Plan): the graph
// is re-batched to `batch` when its ops allow it (one image at a time otherwise).
data::Accuracy engine_accuracy(const Graph& graph, const data::Dataset& ds,
                               const data::Preprocess& pre, int64_t batch, int threads,
                               int64_t limit = 0);

}  // namespace dlas
