// The Trainer: a dlas Graph interpreted with ATen operators under autograd. Every op but
// BatchNormalization goes through the libtorch peer's mapping (torch_ops.h), so training sees
// exactly the semantics the peer is tested for; BatchNormalization is interpreted here in
// training or eval mode. The optimiser is written out (PyTorch's SGD formula) rather than
// taken from torch::optim, so its momentum buffers are plain tensors the checkpoint can hold
// and the pruning masks can be applied to, and this TU needs only ATen headers (torch/torch.h
// roughly doubles the compile time).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_map>
#include <utility>

#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/torch/torch_peer.h"
#include "dlas/torch/train.h"
#include "torch/peer/torch_ops.h"

namespace dlas {

const char* lr_schedule_name(LrSchedule s) {
  switch (s) {
    case LrSchedule::kOneCycle:
      return "onecycle";
    case LrSchedule::kCosine:
      return "cosine";
    case LrSchedule::kConstant:
      return "constant";
  }
  return "?";
}

LrSchedule parse_lr_schedule(const std::string& name) {
  if (name == "onecycle") return LrSchedule::kOneCycle;
  if (name == "cosine") return LrSchedule::kCosine;
  if (name == "constant") return LrSchedule::kConstant;
  fail(ErrorKind::kInvalidInput, "unknown schedule '", name, "' (onecycle, cosine, constant)");
}

namespace {

double cos_anneal(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (std::cos(M_PI * pct) + 1.0);
}

}  // namespace

double scheduled_lr(LrSchedule s, double lr, int64_t step, int64_t total_steps) {
  switch (s) {
    case LrSchedule::kConstant:
      return lr;
    case LrSchedule::kCosine:
      // CosineAnnealingLR(T_max = total_steps, eta_min = 0), stepped per batch.
      return total_steps <= 0 ? lr
                              : lr *
                                    (1.0 + std::cos(M_PI * static_cast<double>(step) /
                                                    static_cast<double>(total_steps))) /
                                    2.0;
    case LrSchedule::kOneCycle: {
      // OneCycleLR(max_lr = lr, total_steps, pct_start 0.3, anneal cos, div_factor 25,
      // final_div_factor 1e4, three_phase false): warm up from lr/25 to lr over the first 30%
      // of the steps, then anneal to lr/25/1e4.
      const double initial = lr / 25.0, min_lr = initial / 1e4;
      const double up_end = 0.3 * static_cast<double>(total_steps) - 1.0;
      const double down_end = static_cast<double>(total_steps) - 1.0;
      const double t = static_cast<double>(step);
      if (t <= up_end) return cos_anneal(initial, lr, up_end > 0 ? t / up_end : 1.0);
      double span = down_end - up_end;
      return cos_anneal(lr, min_lr, span > 0 ? std::min(1.0, (t - up_end) / span) : 1.0);
    }
  }
  return lr;
}

const std::vector<std::string>& trainable_ops() { return libtorch_mapped_ops(); }

bool trainer_supports(const Graph& graph, std::string* why) {
  for (const Node& node : graph.nodes) {
    if (!torch_ops::is_mapped(node.op)) {
      if (why) *why = str(node.label(), ": not mapped to libtorch");
      return false;
    }
  }
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

// Ops whose weight (input 1) and bias (input 2) initializers are trainable.
bool has_weights(const std::string& op) {
  return op == "Conv" || op == "FusedConv" || op == "ConvTranspose" || op == "Gemm" ||
         op == "MatMul";
}
// Ops whose weight may carry a pruning mask.
bool maskable(const std::string& op) {
  return op == "Conv" || op == "FusedConv" || op == "Gemm" || op == "MatMul";
}

at::Tensor labels_tensor(const std::vector<int>& labels) {
  std::vector<int64_t> v(labels.begin(), labels.end());
  return at::tensor(at::ArrayRef<int64_t>(v), at::kLong);
}

// ---- checkpoint file: "DLASCKPT" v2, scalars, then named f32 tensors ------------------
// v2 stores epochs as a double (fractions) and the label smoothing; v1 (integer epochs, no
// smoothing) is still read.

constexpr char kMagic[8] = {'D', 'L', 'A', 'S', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 2;

struct CkptWriter {
  std::string buf;
  template <class T>
  void pod(const T& v) {
    buf.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void string(const std::string& s) {
    pod(static_cast<uint32_t>(s.size()));
    buf += s;
  }
  void tensor(const std::string& name, const at::Tensor& t) {
    string(name);
    at::Tensor c = t.detach().to(at::kFloat).contiguous();
    pod(static_cast<uint32_t>(c.dim()));
    for (int64_t d : c.sizes()) pod(d);
    buf.append(reinterpret_cast<const char*>(c.data_ptr<float>()),
               static_cast<size_t>(c.numel()) * sizeof(float));
  }
};

struct CkptReader {
  std::string path, buf;
  size_t pos = 0;
  void need(size_t n) const {
    if (pos + n > buf.size()) fail(ErrorKind::kInvalidInput, path, ": truncated checkpoint");
  }
  template <class T>
  T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, buf.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string string() {
    uint32_t n = pod<uint32_t>();
    need(n);
    std::string s = buf.substr(pos, n);
    pos += n;
    return s;
  }
  at::Tensor tensor(std::string* name) {
    *name = string();
    uint32_t rank = pod<uint32_t>();
    if (rank > 16) fail(ErrorKind::kInvalidInput, path, ": corrupt tensor '", *name, "'");
    std::vector<int64_t> sizes(rank);
    int64_t numel = 1;
    for (auto& d : sizes) {
      d = pod<int64_t>();
      if (d < 0 || d > (int64_t{1} << 40)) {
        fail(ErrorKind::kInvalidInput, path, ": corrupt tensor '", *name, "'");
      }
      numel *= d;
    }
    size_t bytes = static_cast<size_t>(numel) * sizeof(float);
    need(bytes);
    at::Tensor t = at::empty(sizes, at::kFloat);
    if (bytes) std::memcpy(t.data_ptr<float>(), buf.data() + pos, bytes);
    pos += bytes;
    return t;
  }
};

}  // namespace

struct Trainer::Impl {
  Graph graph;
  TrainOptions opt;
  int64_t batch0 = 1;  // the graph's own batch (Reshape constants may name it)
  std::unordered_map<std::string, at::Tensor> consts;  // every initializer as a torch tensor
  std::vector<std::string> params;                     // trainable, graph order
  std::vector<std::string> buffers;                    // BatchNorm running mean / var
  std::unordered_map<std::string, at::Tensor> momentum;
  std::map<std::string, at::Tensor> masks;
  // Progress through the schedule.
  int epochs_done = 0;
  int64_t global_step = 0;
  int64_t step_in_epoch = 0;  // batches done in the current (unfinished) epoch
  double epoch_loss_sum = 0;
  int64_t epoch_correct = 0, epoch_samples = 0;
  int64_t steps_per_epoch = 0;  // set by fit (0 before)

  at::Tensor run(const at::Tensor& x, bool training) {
    std::unordered_map<std::string, at::Tensor> env;
    env[graph.inputs[0].name] =
        opt.channels_last && x.dim() == 4 ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
    auto lookup = [&](const Node& node, const std::string& name) -> at::Tensor {
      if (name.empty()) return at::Tensor();
      auto it = env.find(name);
      if (it != env.end()) return it->second;
      auto c = consts.find(name);
      if (c != consts.end()) return c->second;
      fail(ErrorKind::kInternal, node.label(), ": value '", name, "' is not computed yet");
    };
    for (const Node& node : graph.nodes) {
      std::vector<at::Tensor> args;
      for (const std::string& in : node.inputs) args.push_back(lookup(node, in));
      std::vector<at::Tensor> outs;
      if (node.op == "BatchNormalization") {
        if (node.outputs.size() > 1) {
          fail(ErrorKind::kUnsupported, node.label(), ": training-mode outputs");
        }
        try {
          outs.push_back(at::batch_norm(args.at(0), args.at(1), args.at(2), args.at(3), args.at(4),
                                        training, opt.bn_momentum,
                                        node.attr_float("epsilon", 1e-5f),
                                        /*cudnn_enabled=*/false));
        } catch (const c10::Error& e) {
          fail(ErrorKind::kRuntime, node.label(), ": libtorch: ", e.what_without_backtrace());
        }
      } else {
        if (node.op == "Reshape" && args.size() > 1 && args[1].defined() && args[1].numel() > 0 &&
            args[0].defined() && args[0].dim() > 0 && args[0].size(0) != batch0) {
          // A shape constant that names the graph's batch follows the batch actually run.
          at::Tensor s = args[1].to(at::kLong).clone();
          if (s[0].item<int64_t>() == batch0) {
            s[0] = args[0].size(0);
            args[1] = s;
          }
        }
        outs = torch_ops::run_node(node, std::move(args));
      }
      for (size_t i = 0; i < node.outputs.size() && i < outs.size(); ++i) {
        if (!node.outputs[i].empty()) env[node.outputs[i]] = outs[i];
      }
    }
    return lookup(graph.nodes.back(), graph.outputs.at(0));
  }

  // One SGD step; returns (loss, correct).
  std::pair<double, int64_t> step(const Tensor& images, const std::vector<int>& labels, double lr) {
    DLAS_CHECK(images.rank() == 4 && images.dim(0) == static_cast<int64_t>(labels.size()),
               ErrorKind::kInvalidInput, "train step: images ", images.describe(), " and ",
               labels.size(), " labels");
    at::Tensor x = torch_ops::to_torch(images);
    at::Tensor y = labels_tensor(labels);
    for (const std::string& name : params) {
      at::Tensor& p = consts.at(name);
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    at::Tensor logits = run(x, /*training=*/true);
    DLAS_CHECK(logits.dim() == 2, ErrorKind::kInvalidInput, "graph '", graph.name,
               "': the first output must be logits [N,classes], got rank ", logits.dim());
    at::Tensor loss = at::cross_entropy_loss(logits, y, /*weight=*/{}, at::Reduction::Mean,
                                             /*ignore_index=*/-100, opt.label_smoothing);
    loss.backward();
    at::NoGradGuard no_grad;
    for (const std::string& name : params) {
      at::Tensor& p = consts.at(name);
      at::Tensor g = p.grad();
      if (!g.defined()) continue;  // not reached by the loss
      auto m = masks.find(name);
      if (m != masks.end()) g.mul_(m->second);
      // torch.optim.SGD (dampening 0, no Nesterov): d = g + wd p; buf = mom buf + d (buf = d
      // at the first step); p -= lr buf.
      at::Tensor d = opt.weight_decay != 0 ? g.add(p, opt.weight_decay) : g.clone();
      at::Tensor& buf = momentum[name];
      if (!buf.defined()) {
        buf = d;
      } else {
        buf.mul_(opt.momentum).add_(d);
      }
      if (m != masks.end()) buf.mul_(m->second);
      p.add_(buf, -lr);
      if (m != masks.end()) p.mul_(m->second);
    }
    int64_t correct = logits.argmax(1).eq(y).sum().item<int64_t>();
    return {loss.item<double>(), correct};
  }

  void save(const std::string& path) const {
    CkptWriter w;
    w.buf.append(kMagic, sizeof(kMagic));
    w.pod(kVersion);
    w.string(graph.name);
    w.pod(opt.epochs);
    w.pod(opt.label_smoothing);
    w.pod(opt.batch);
    w.pod(opt.lr);
    w.pod(static_cast<int32_t>(opt.schedule));
    w.pod(opt.seed);
    w.pod(opt.limit);
    w.pod(steps_per_epoch);
    w.pod(static_cast<int64_t>(epochs_done));
    w.pod(global_step);
    w.pod(step_in_epoch);
    w.pod(epoch_loss_sum);
    w.pod(epoch_correct);
    w.pod(epoch_samples);
    uint32_t count = static_cast<uint32_t>(params.size() + buffers.size() + masks.size());
    for (const auto& [name, t] : momentum) count += t.defined() ? 1 : 0;
    w.pod(count);
    for (const std::string& n : params) w.tensor("param:" + n, consts.at(n));
    for (const std::string& n : buffers) w.tensor("buffer:" + n, consts.at(n));
    for (const std::string& n : params) {
      auto it = momentum.find(n);
      if (it != momentum.end() && it->second.defined()) w.tensor("momentum:" + n, it->second);
    }
    for (const auto& [n, m] : masks) w.tensor("mask:" + n, m);
    write_file_atomic(path, w.buf);
  }

  void load(const std::string& path) {
    CkptReader r;
    r.path = path;
    {
      std::ifstream f(path, std::ios::binary);
      if (!f) fail(ErrorKind::kInvalidInput, path, ": cannot read checkpoint");
      r.buf.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    r.need(sizeof(kMagic));
    if (std::memcmp(r.buf.data(), kMagic, sizeof(kMagic)) != 0) {
      fail(ErrorKind::kInvalidInput, path, ": not a dlas checkpoint");
    }
    r.pos = sizeof(kMagic);
    const uint32_t version = r.pod<uint32_t>();
    if (version != 1 && version != kVersion) {
      fail(ErrorKind::kInvalidInput, path, ": unknown version ", version);
    }
    std::string name = r.string();
    auto expect = [&](bool ok, const char* what, auto saved, auto now) {
      if (!ok) {
        fail(ErrorKind::kInvalidInput, path, ": checkpoint was made with ", what, " ", saved,
             ", this run has ", now);
      }
    };
    expect(name == graph.name, "model", name, graph.name);
    const double epochs = version == 1 ? static_cast<double>(r.pod<int64_t>()) : r.pod<double>();
    expect(epochs == opt.epochs, "--epochs", epochs, opt.epochs);
    const double smoothing = version == 1 ? 0.0 : r.pod<double>();
    expect(smoothing == opt.label_smoothing, "--label-smoothing", smoothing, opt.label_smoothing);
    int64_t batch = r.pod<int64_t>();
    expect(batch == opt.batch, "--batch", batch, opt.batch);
    double lr = r.pod<double>();
    expect(lr == opt.lr, "--lr", lr, opt.lr);
    int32_t sched = r.pod<int32_t>();
    expect(sched == static_cast<int32_t>(opt.schedule), "--schedule",
           lr_schedule_name(static_cast<LrSchedule>(sched)), lr_schedule_name(opt.schedule));
    uint64_t seed = r.pod<uint64_t>();
    expect(seed == opt.seed, "--seed", seed, opt.seed);
    int64_t limit = r.pod<int64_t>();
    expect(limit == opt.limit, "--limit", limit, opt.limit);
    int64_t spe = r.pod<int64_t>();
    if (steps_per_epoch > 0)
      expect(spe == steps_per_epoch, "steps per epoch", spe, steps_per_epoch);
    epochs_done = static_cast<int>(r.pod<int64_t>());
    global_step = r.pod<int64_t>();
    step_in_epoch = r.pod<int64_t>();
    epoch_loss_sum = r.pod<double>();
    epoch_correct = r.pod<int64_t>();
    epoch_samples = r.pod<int64_t>();
    uint32_t count = r.pod<uint32_t>();
    std::set<std::string> param_set(params.begin(), params.end());
    std::set<std::string> buffer_set(buffers.begin(), buffers.end());
    momentum.clear();
    at::NoGradGuard no_grad;
    for (uint32_t i = 0; i < count; ++i) {
      std::string key;
      at::Tensor t = r.tensor(&key);
      size_t colon = key.find(':');
      std::string kind = key.substr(0, colon), n = key.substr(colon + 1);
      bool known = (kind == "param" || kind == "momentum" || kind == "mask")
                       ? param_set.count(n) != 0
                       : kind == "buffer" && buffer_set.count(n) != 0;
      if (!known) fail(ErrorKind::kInvalidInput, path, ": tensor '", key, "' is not in the model");
      if (kind == "mask") {
        masks[n] = t;
        continue;
      }
      at::Tensor& dst = kind == "momentum" ? momentum[n] : consts.at(n);
      if (kind == "momentum") {
        dst = t;
      } else {
        if (!dst.sizes().equals(t.sizes())) {
          fail(ErrorKind::kInvalidInput, path, ": tensor '", key, "' has another shape");
        }
        dst.copy_(t);
      }
    }
  }
};

Trainer::Trainer(Graph graph, TrainOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.graph = std::move(graph);
  m.opt = std::move(options);
  const Graph& g = m.graph;
  DLAS_CHECK(g.inputs.size() == 1 && g.inputs[0].shape.size() == 4 &&
                 g.inputs[0].dtype == DType::kF32 && !g.outputs.empty() && !g.nodes.empty(),
             ErrorKind::kUnsupported, "graph '", g.name,
             "': training needs one f32 image input [N,C,H,W] and logits as the first output");
  DLAS_CHECK(m.opt.epochs > 0 && std::isfinite(m.opt.epochs) && m.opt.batch >= 2,
             ErrorKind::kInvalidInput, "training needs epochs > 0 and batch >= 2");
  DLAS_CHECK(m.opt.label_smoothing >= 0 && m.opt.label_smoothing < 1, ErrorKind::kInvalidInput,
             "label smoothing ", m.opt.label_smoothing, " is outside [0, 1)");
  m.batch0 = g.inputs[0].shape[0];
  std::string why;
  if (!trainer_supports(g, &why)) fail(ErrorKind::kUnsupported, why);
  if (m.opt.threads > 0) at::set_num_threads(m.opt.threads);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);

  std::set<std::string> param_set, buffer_set, mask_candidates;
  for (const Node& node : g.nodes) {
    auto is_const = [&](size_t i) {
      return i < node.inputs.size() && !node.inputs[i].empty() &&
             g.initializers.count(node.inputs[i]) != 0;
    };
    if (has_weights(node.op)) {
      for (size_t i : {size_t{1}, size_t{2}}) {
        if (node.op == "MatMul" && i == 2) continue;
        if (is_const(i)) param_set.insert(node.inputs[i]);
      }
      if (maskable(node.op) && is_const(1)) mask_candidates.insert(node.inputs[1]);
    } else if (node.op == "BatchNormalization") {
      for (size_t i : {size_t{1}, size_t{2}}) {
        if (is_const(i)) param_set.insert(node.inputs[i]);
      }
      for (size_t i : {size_t{3}, size_t{4}}) {
        if (is_const(i)) buffer_set.insert(node.inputs[i]);
      }
    }
  }
  for (const auto& [name, t] : g.initializers) {
    bool trainable = param_set.count(name) || buffer_set.count(name);
    if (trainable && t.dtype() != DType::kF32) {
      fail(ErrorKind::kUnsupported, "initializer '", name, "' is ", dtype_name(t.dtype()),
           ": training needs float32 weights");
    }
    m.consts.emplace(name, torch_ops::to_torch(t));
  }
  // Graph order (deterministic: the optimiser walks parameters in this order).
  std::set<std::string> seen;
  for (const Node& node : g.nodes) {
    for (const std::string& in : node.inputs) {
      if (in.empty() || !seen.insert(in).second) continue;
      if (param_set.count(in)) m.params.push_back(in);
      if (buffer_set.count(in)) m.buffers.push_back(in);
    }
  }
  for (const std::string& name : m.params) {
    at::Tensor& t = m.consts.at(name);
    if (m.opt.channels_last && t.dim() == 4) t = t.contiguous(at::MemoryFormat::ChannelsLast);
    t.requires_grad_(true);
  }
  // Masks: explicit ones first, then the zeros of the initial weights.
  for (const auto& [name, mask] : m.opt.masks) {
    DLAS_CHECK(mask_candidates.count(name) != 0, ErrorKind::kInvalidInput, "mask '", name,
               "' does not name a Conv/Gemm/MatMul weight initializer");
    at::Tensor t = torch_ops::to_torch(mask.cast(DType::kF32)).ne(0).to(at::kFloat);
    DLAS_CHECK(t.sizes().equals(m.consts.at(name).sizes()), ErrorKind::kInvalidInput, "mask '",
               name, "' has shape ", mask.describe(), " unlike its weight");
    m.masks[name] = t;
  }
  if (m.opt.masks_from_zeros) {
    for (const std::string& name : mask_candidates) {
      if (m.masks.count(name)) continue;
      at::Tensor w = m.consts.at(name).detach();
      if (w.eq(0).any().item<bool>()) m.masks[name] = w.ne(0).to(at::kFloat);
    }
  }
  at::NoGradGuard no_grad;
  for (const auto& [name, mask] : m.masks) m.consts.at(name).mul_(mask);
}

Trainer::~Trainer() = default;
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;

double Trainer::train_step(const Tensor& images, const std::vector<int>& labels, double lr) {
  return impl_->step(images, labels, lr).first;
}

Tensor Trainer::forward(const Tensor& images, bool training) {
  at::NoGradGuard no_grad;
  DLAS_CHECK(images.rank() == 4, ErrorKind::kInvalidInput,
             "forward: images must be [N,C,H,W], got ", images.describe());
  return torch_ops::from_torch(impl_->run(torch_ops::to_torch(images), training), DType::kF32);
}

data::Accuracy Trainer::evaluate(const data::Dataset& ds, const data::Preprocess& pre,
                                 int64_t batch, int64_t limit) {
  data::Loader loader(ds, pre, {.batch = batch, .limit = limit});
  loader.start_epoch(0);
  data::Batch b;
  data::Accuracy acc;
  while (loader.next(b)) acc.add(forward(b.images, /*training=*/false), b.labels);
  return acc;
}

TrainResult Trainer::fit(const data::Dataset& train) {
  Impl& m = *impl_;
  const TrainOptions& o = m.opt;
  data::LoaderOptions lo;
  lo.batch = o.batch;
  lo.shuffle = true;
  lo.augment = o.augment;
  lo.drop_last = true;  // a batch of one would break BatchNorm's batch statistics
  lo.seed = o.seed;
  lo.limit = o.limit;
  lo.threads = std::max(1, o.threads);
  data::Loader loader(train, o.preprocess, lo);
  m.steps_per_epoch = loader.batches_per_epoch();
  DLAS_CHECK(m.steps_per_epoch > 0, ErrorKind::kInvalidInput, "dataset '", train.info().name,
             "': fewer records (", loader.samples(), ") than one batch (", o.batch, ")");
  if (o.resume) {
    DLAS_CHECK(!o.checkpoint.empty(), ErrorKind::kInvalidInput, "--resume needs --checkpoint");
    if (!std::filesystem::exists(o.checkpoint)) {
      fail(ErrorKind::kInvalidInput, o.checkpoint, ": no such checkpoint to resume from");
    }
    m.load(o.checkpoint);
  }
  DLAS_CHECK(o.max_steps >= 0, ErrorKind::kInvalidInput, "max_steps must be >= 0");
  int64_t total = std::llround(o.epochs * static_cast<double>(m.steps_per_epoch));
  DLAS_CHECK(total >= 1, ErrorKind::kInvalidInput, "--epochs ", o.epochs, " x ", m.steps_per_epoch,
             " steps per epoch rounds to no step");
  if (o.max_steps > 0) total = std::min(total, o.max_steps);
  // Epochs this run touches, the last one possibly partial.
  const int epochs_touched = static_cast<int>((total + m.steps_per_epoch - 1) / m.steps_per_epoch);
  TrainResult result;
  const auto t0 = Clock::now();
  int64_t images_this_run = 0, steps_this_run = 0;
  int epochs_this_run = 0;
  auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  while (m.global_step < total) {
    const int epoch = m.epochs_done;
    const auto te = Clock::now();
    loader.start_epoch(epoch);
    data::Batch b;
    for (int64_t i = 0; i < m.step_in_epoch; ++i) loader.next(b);  // resumed mid-epoch
    while (m.global_step < total && loader.next(b)) {
      double lr = scheduled_lr(o.schedule, o.lr, m.global_step, total);
      auto [loss, correct] = m.step(b.images, b.labels, lr);
      const int64_t n = static_cast<int64_t>(b.labels.size());
      m.epoch_loss_sum += loss * static_cast<double>(n);
      m.epoch_correct += correct;
      m.epoch_samples += n;
      ++m.step_in_epoch;
      ++m.global_step;
      images_this_run += n;
      ++steps_this_run;
      bool last = m.step_in_epoch == m.steps_per_epoch || m.global_step == total;
      if (o.on_progress) {
        TrainProgress p;
        p.epoch = epoch;
        p.epochs = epochs_touched;
        p.step = m.step_in_epoch;
        p.steps_per_epoch = m.steps_per_epoch;
        p.global_step = m.global_step;
        p.total_steps = total;
        p.loss = m.epoch_loss_sum / static_cast<double>(m.epoch_samples);
        p.accuracy = static_cast<double>(m.epoch_correct) / static_cast<double>(m.epoch_samples);
        p.lr = lr;
        double el = seconds_since(t0);
        p.images_per_second = el > 0 ? static_cast<double>(images_this_run) / el : 0;
        p.eta_seconds =
            el / static_cast<double>(steps_this_run) * static_cast<double>(total - m.global_step);
        p.epoch_done = last;
        o.on_progress(p);
      }
      if (!last && o.stop && o.stop->load()) {
        if (!o.checkpoint.empty()) m.save(o.checkpoint);
        result.stopped = true;
        break;
      }
    }
    if (result.stopped) break;
    EpochStats es;
    es.epoch = epoch;
    es.samples = m.epoch_samples;
    es.loss = m.epoch_samples ? m.epoch_loss_sum / static_cast<double>(m.epoch_samples) : 0;
    es.accuracy = m.epoch_samples
                      ? static_cast<double>(m.epoch_correct) / static_cast<double>(m.epoch_samples)
                      : 0;
    es.seconds = seconds_since(te);
    result.epochs.push_back(es);
    if (m.step_in_epoch < m.steps_per_epoch) break;  // max_steps cut this epoch short
    ++m.epochs_done;
    m.step_in_epoch = 0;
    m.epoch_loss_sum = 0;
    m.epoch_correct = m.epoch_samples = 0;
    ++epochs_this_run;
    if (!o.checkpoint.empty()) m.save(o.checkpoint);
    if ((o.stop && o.stop->load()) ||
        (o.stop_after_epochs > 0 && epochs_this_run >= o.stop_after_epochs)) {
      result.stopped = m.global_step < total;
      break;
    }
  }
  result.global_step = m.global_step;
  result.epochs_done = m.epochs_done;
  result.seconds = seconds_since(t0);
  return result;
}

Graph Trainer::graph() const {
  const Impl& m = *impl_;
  Graph g = m.graph;
  for (const auto* names : {&m.params, &m.buffers}) {
    for (const std::string& n : *names) {
      g.initializers[n] = torch_ops::from_torch(m.consts.at(n).detach(), DType::kF32);
    }
  }
  g.infer();
  return g;
}

std::vector<std::string> Trainer::parameter_names() const { return impl_->params; }

std::vector<std::string> Trainer::masked_names() const {
  std::vector<std::string> v;
  for (const auto& [n, t] : impl_->masks) v.push_back(n);
  return v;
}

int64_t Trainer::global_step() const { return impl_->global_step; }
int Trainer::epochs_done() const { return impl_->epochs_done; }

void Trainer::save_checkpoint(const std::string& path) const { impl_->save(path); }
void Trainer::load_checkpoint(const std::string& path) { impl_->load(path); }

}  // namespace dlas
