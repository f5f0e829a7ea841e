// Fast steps for the ops that only move data: Transpose, Slice, Gather by a progression of
// constant indices and constant Pad, on NCHW
// values of any element type (f32, 16-bit, 8-bit). Each is one box copy: runs of contiguous
// bytes, one per index of the box's outer axes, read and written at strided offsets. Axes
// that stay neighbours on both sides merge, and the innermost one becomes the run when it is
// contiguous on both sides, so a channel shuffle copies whole planes, a channel Slice one
// block of bytes, and a Pad whole rows. A Transpose that moves the innermost axis runs the
// tiled 2-D transpose where the permutation swaps two runs of axes, else an element loop.
// The channels-last Transpose of a blocked value reads the blocks directly.
#include <algorithm>
#include <cstring>
#include <optional>

#include "dlas/algo/layout.h"
#include "dlas/model/shape_math.h"
#include "system/plan/steps.h"

namespace dlas::plan {
namespace {

// Runs of `run` bytes at src + sum(i_k * src[k]) and dst + sum(i_k * dst[k]) for every index
// of `dims` (outermost first; strides in bytes, the source's possibly negative).
struct BoxCopy {
  std::vector<int64_t> dims, src, dst;
  int64_t src_offset = 0, dst_offset = 0;
  size_t run = 0;

  // Element box -> merged axes and the widest contiguous run.
  void simplify() {
    std::vector<int64_t> d, s, t;
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] == 1) continue;
      if (!d.empty() && s.back() == src[k] * dims[k] && t.back() == dst[k] * dims[k]) {
        d.back() *= dims[k];
        s.back() = src[k], t.back() = dst[k];
        continue;
      }
      d.push_back(dims[k]), s.push_back(src[k]), t.push_back(dst[k]);
    }
    if (!d.empty() && s.back() == static_cast<int64_t>(run) &&
        t.back() == static_cast<int64_t>(run)) {
      run *= static_cast<size_t>(d.back());
      d.pop_back(), s.pop_back(), t.pop_back();
    }
    dims = std::move(d), src = std::move(s), dst = std::move(t);
  }

  int64_t runs() const {
    int64_t r = 1;
    for (int64_t e : dims) r *= e;
    return r;
  }

  template <class T>
  static void copy_elems(const char* s, int64_t ss, char* d, int64_t n) {
    T* out = reinterpret_cast<T*>(d);
    for (int64_t i = 0; i < n; ++i) std::memcpy(out + i, s + i * ss, sizeof(T));
  }

  void operator()(const void* from, void* to, ThreadPool& pool) const {
    const char* s0 = static_cast<const char*>(from) + src_offset;
    char* d0 = static_cast<char*>(to) + dst_offset;
    const int64_t total = runs();
    if (total == 0 || run == 0) return;
    // Tasks of about 64 KiB; the innermost axis walked with its own stride when runs are
    // single small elements.
    const int64_t per_task = std::max<int64_t>(1, static_cast<int64_t>(65536 / run));
    const int64_t tasks = (total + per_task - 1) / per_task;
    const size_t r = dims.size();
    pool.parallel_for(static_cast<size_t>(tasks), [&](size_t task) {
      int64_t lo = static_cast<int64_t>(task) * per_task;
      const int64_t hi = std::min(total, lo + per_task);
      std::vector<int64_t> idx(r);
      int64_t rem = lo, so = 0, dof = 0;
      for (size_t k = r; k-- > 0;) {
        idx[k] = rem % dims[k], rem /= dims[k];
        so += idx[k] * src[k], dof += idx[k] * dst[k];
      }
      while (lo < hi) {
        // A stretch along the innermost axis.
        int64_t n = r ? std::min(hi - lo, dims[r - 1] - idx[r - 1]) : hi - lo;
        const int64_t ss = r ? src[r - 1] : 0, ds = r ? dst[r - 1] : 0;
        if (ds == static_cast<int64_t>(run) && run <= 8 && r) {
          switch (run) {
            case 1:
              copy_elems<uint8_t>(s0 + so, ss, d0 + dof, n);
              break;
            case 2:
              copy_elems<uint16_t>(s0 + so, ss, d0 + dof, n);
              break;
            case 4:
              copy_elems<uint32_t>(s0 + so, ss, d0 + dof, n);
              break;
            default:
              for (int64_t i = 0; i < n; ++i) std::memcpy(d0 + dof + i * ds, s0 + so + i * ss, run);
          }
        } else {
          for (int64_t i = 0; i < n; ++i) std::memcpy(d0 + dof + i * ds, s0 + so + i * ss, run);
        }
        lo += n;
        if (!r) break;
        so += n * ss, dof += n * ds;
        idx[r - 1] += n;
        for (size_t k = r - 1; k > 0 && idx[k] == dims[k]; --k) {
          so -= dims[k] * src[k], dof -= dims[k] * dst[k];
          idx[k] = 0, ++idx[k - 1];
          so += src[k - 1], dof += dst[k - 1];
        }
      }
    });
  }
};

std::vector<int64_t> byte_strides(const Shape& s, size_t elem) {
  std::vector<int64_t> st(s.size());
  int64_t acc = static_cast<int64_t>(elem);
  for (size_t k = s.size(); k-- > 0;) st[k] = acc, acc *= s[k];
  return st;
}

class BoxCopyStep : public Step {
 public:
  // fill: bytes of one element written over the whole output first (a Pad's constant).
  BoxCopyStep(const Node& n, BoxCopy box, std::vector<unsigned char> fill = {},
              size_t out_bytes = 0)
      : x_name_(n.inputs[0]),
        y_name_(n.outputs[0]),
        box_(std::move(box)),
        fill_(std::move(fill)),
        out_bytes_(out_bytes) {
    box_.simplify();
  }
  void bind(const Binder& b) override {
    x_ = b.value(x_name_);
    y_ = b.value(y_name_);
  }
  void run(ThreadPool& pool) override {
    if (!fill_.empty()) fill(pool);
    box_(x_, y_, pool);
  }
  std::string kernel() const override { return "fast"; }

 private:
  void fill(ThreadPool& pool) {
    const size_t es = fill_.size();
    bool zero = true;
    for (unsigned char c : fill_) zero &= c == 0;
    constexpr size_t kChunk = 65536;
    const size_t chunks = (out_bytes_ + kChunk - 1) / kChunk;
    pool.parallel_for(chunks, [&](size_t t) {
      char* d = static_cast<char*>(y_) + t * kChunk;
      const size_t len = std::min(kChunk, out_bytes_ - t * kChunk);
      if (zero) {
        std::memset(d, 0, len);
      } else {
        for (size_t i = 0; i < len; i += es) std::memcpy(d + i, fill_.data(), es);
      }
    });
  }

  std::string x_name_, y_name_;
  BoxCopy box_;
  std::vector<unsigned char> fill_;
  size_t out_bytes_;
  const void* x_ = nullptr;
  void* y_ = nullptr;
};

// A Transpose that swaps two runs of axes: a batch of tiled 2-D transposes.
class TransposeStep : public Step {
 public:
  TransposeStep(const Node& n, size_t elem, int64_t batch, int64_t rows, int64_t cols)
      : x_name_(n.inputs[0]),
        y_name_(n.outputs[0]),
        elem_(elem),
        batch_(batch),
        rows_(rows),
        cols_(cols) {}
  void bind(const Binder& b) override {
    x_ = b.value(x_name_);
    y_ = b.value(y_name_);
  }
  void run(ThreadPool& pool) override { transpose_2d(x_, y_, elem_, batch_, rows_, cols_, pool); }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, y_name_;
  size_t elem_;
  int64_t batch_, rows_, cols_;
  const void* x_ = nullptr;
  void* y_ = nullptr;
};

// The transposes between a blocked value (nchw8c / nchw16c) and channels-last rows
// [N][H][W][C] around a ConvNeXt block's Linear layers: perm 0,2,3,1 reads the blocks
// (to_blocked false), perm 0,3,1,2 writes them (the last block's padding lanes zero). Per
// pixel and block the block's channels are one contiguous run on both sides, so each step
// replaces a reorder and a strided transpose with one pass. Work split by pixels.
class ChannelsLastBlockStep : public Step {
 public:
  ChannelsLastBlockStep(const Node& n, size_t elem, int64_t batch, int64_t c, int64_t hw, Layout l,
                        bool to_blocked)
      : x_name_(n.inputs[0]),
        y_name_(n.outputs[0]),
        elem_(elem),
        batch_(batch),
        c_(c),
        hw_(hw),
        block_(layout_block(l)),
        blocks_(blocked_channels(c, l) / layout_block(l)),
        to_blocked_(to_blocked) {}
  void bind(const Binder& b) override {
    x_ = static_cast<const uint8_t*>(b.value(x_name_));
    y_ = static_cast<uint8_t*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override {
    // Tasks of 8 to 64 pixels x every block, at least two per thread where the plane allows.
    const int64_t per = std::clamp<int64_t>(hw_ / (2 * pool.threads()), 8, 64);
    const int64_t chunks = (hw_ + per - 1) / per;
    const size_t whole = static_cast<size_t>(block_) * elem_, row = static_cast<size_t>(c_) * elem_;
    // Byte strides per pixel: a block run of `whole` bytes, a channels-last row of `row`.
    const size_t xs = to_blocked_ ? row : whole, ys = to_blocked_ ? whole : row;
    pool.parallel_for(static_cast<size_t>(batch_ * chunks), [&](size_t item) {
      const int64_t img = static_cast<int64_t>(item) / chunks;
      const int64_t p0 = (static_cast<int64_t>(item) % chunks) * per;
      const int64_t p1 = std::min(hw_, p0 + per);
      const size_t blocked_image = static_cast<size_t>(img * blocks_ * hw_ * block_) * elem_;
      const size_t rows_image = static_cast<size_t>(img * hw_ * c_) * elem_;
      const uint8_t* xi = x_ + (to_blocked_ ? rows_image : blocked_image);
      uint8_t* yi = y_ + (to_blocked_ ? blocked_image : rows_image);
      for (int64_t b = 0; b < blocks_; ++b) {
        const size_t run = static_cast<size_t>(std::min(block_, c_ - b * block_)) * elem_;
        const size_t in_block = static_cast<size_t>(b * hw_ * block_) * elem_;
        const size_t in_row = static_cast<size_t>(b * block_) * elem_;
        const uint8_t* xb = xi + (to_blocked_ ? in_row : in_block);
        uint8_t* yb = yi + (to_blocked_ ? in_block : in_row);
        // Whole blocks of 64 or 32 bytes as fixed-size copies (one or two vector moves).
        if (run == whole && whole == 64)
          for (int64_t p = p0; p < p1; ++p) std::memcpy(yb + p * ys, xb + p * xs, 64);
        else if (run == whole && whole == 32)
          for (int64_t p = p0; p < p1; ++p) std::memcpy(yb + p * ys, xb + p * xs, 32);
        else
          for (int64_t p = p0; p < p1; ++p) {
            std::memcpy(yb + p * ys, xb + p * xs, run);
            if (to_blocked_) std::memset(yb + p * ys + run, 0, whole - run);
          }
      }
    });
  }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, y_name_;
  size_t elem_;
  int64_t batch_, c_, hw_, block_, blocks_;
  bool to_blocked_;
  const uint8_t* x_ = nullptr;
  uint8_t* y_ = nullptr;
};

// The node's single activation input and output, NCHW, of one type; nullptr otherwise.
const ValueInfo* moved_value(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.inputs.empty() || n.outputs.size() != 1 || is_blocked(ctx.x_layout) ||
      is_blocked(ctx.y_layout) || g.constant(n.inputs[0]) || !g.has_value(n.inputs[0]))
    return nullptr;
  const ValueInfo& x = g.value(n.inputs[0]);
  if (g.value(n.outputs[0]).dtype != x.dtype) return nullptr;
  return &x;
}

// Constant integer input i, or the attribute `attr` when the input is absent; nullopt when
// the input is present but not a constant.
std::optional<std::vector<int64_t>> ints_of(const Graph& g, const Node& n, size_t i,
                                            const char* attr) {
  if (n.inputs.size() > i && !n.inputs[i].empty()) {
    const Tensor* t = g.constant(n.inputs[i]);
    if (!t) return std::nullopt;
    return t->to_int64_vector();
  }
  return n.attr_ints(attr, {});
}

}  // namespace

// Transpose of any element type. Where the innermost output axis is not the input's
// innermost axis and the permutation, once axes of extent 1 are dropped and axes that stay
// neighbours are merged, swaps two runs of axes behind an optional leading run that stays in
// place (NCHW <-> NHWC: [N][C][HW] <-> [N][HW][C]), 2- and 4-byte elements run the tiled 2-D
// transpose; everything else is a box copy (a channel shuffle's [N][G][C/G][HW] ->
// [N][C/G][G][HW] copies whole planes).
std::unique_ptr<Step> lower_transpose(const LowerContext& ctx) {
  const Node& n = ctx.node;
  if (n.op != "Transpose" || n.inputs.size() != 1) return nullptr;
  if (is_blocked(ctx.x_layout)) {
    // Only the channels-last transpose of a blocked value (the layout pass's
    // transpose_reads_blocked).
    const ValueInfo& x = ctx.graph.value(n.inputs[0]);
    if (!transpose_reads_blocked(ctx.graph, n, ctx.x_layout) || is_blocked(ctx.y_layout))
      return nullptr;
    return std::make_unique<ChannelsLastBlockStep>(n, dtype_size(x.dtype), x.shape[0], x.shape[1],
                                                   x.shape[2] * x.shape[3], ctx.x_layout, false);
  }
  if (is_blocked(ctx.y_layout)) {
    // Only channels-last rows into blocks (the layout pass's transpose_writes_blocked).
    const ValueInfo& x = ctx.graph.value(n.inputs[0]);
    if (!transpose_writes_blocked(ctx.graph, n, ctx.y_layout)) return nullptr;
    return std::make_unique<ChannelsLastBlockStep>(n, dtype_size(x.dtype), x.shape[0], x.shape[3],
                                                   x.shape[1] * x.shape[2], ctx.y_layout, true);
  }
  const ValueInfo* xp = moved_value(ctx);
  if (!xp) return nullptr;
  const ValueInfo& x = *xp;
  const size_t elem = dtype_size(x.dtype);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> perm = n.attr_ints("perm", {});
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != r) return nullptr;
  for (int64_t p : perm)
    if (p < 0 || p >= r) return nullptr;
  // The permutation over the axes of extent > 1, renumbered.
  std::vector<int64_t> kept, ext;
  std::vector<int64_t> index(static_cast<size_t>(r), -1);
  for (int64_t a = 0; a < r; ++a)
    if (x.shape[static_cast<size_t>(a)] > 1) {
      index[static_cast<size_t>(a)] = static_cast<int64_t>(ext.size());
      ext.push_back(x.shape[static_cast<size_t>(a)]);
    }
  for (int64_t p : perm)
    if (index[static_cast<size_t>(p)] >= 0) kept.push_back(index[static_cast<size_t>(p)]);
  // Runs of input axes that stay neighbours in the output, in output order.
  std::vector<std::pair<int64_t, int64_t>> runs;  // (first input axis, extent product)
  for (size_t k = 0; k < kept.size(); ++k) {
    const int64_t e = ext[static_cast<size_t>(kept[k])];
    if (k > 0 && kept[k] == kept[k - 1] + 1)
      runs.back().second *= e;
    else
      runs.push_back({kept[k], e});
  }
  const bool inner_moves = !kept.empty() && kept.back() != static_cast<int64_t>(ext.size()) - 1;
  if (inner_moves && (elem == 2 || elem == 4)) {
    if (runs.size() == 2 && runs[0].first > runs[1].first)
      return std::make_unique<TransposeStep>(n, elem, 1, runs[1].second, runs[0].second);
    if (runs.size() == 3 && runs[0].first == 0 && runs[1].first > runs[2].first)
      return std::make_unique<TransposeStep>(n, elem, runs[0].second, runs[2].second,
                                             runs[1].second);
  }
  BoxCopy box;
  box.run = elem;
  const std::vector<int64_t> xs = byte_strides(x.shape, elem);
  Shape y;
  for (int64_t p : perm) y.push_back(x.shape[static_cast<size_t>(p)]);
  box.dims = y;
  box.dst = byte_strides(y, elem);
  for (int64_t p : perm) box.src.push_back(xs[static_cast<size_t>(p)]);
  return std::make_unique<BoxCopyStep>(n, std::move(box));
}

// Slice (starts, ends, axes and steps as constant inputs, or as attributes before opset
// 10), any steps: a box copy from the first selected element.
std::unique_ptr<Step> lower_gather(const LowerContext& ctx);

std::unique_ptr<Step> lower_slice(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.op == "Gather") return lower_gather(ctx);
  if (n.op != "Slice") return nullptr;
  const ValueInfo* xp = moved_value(ctx);
  if (!xp) return nullptr;
  const auto starts = ints_of(g, n, 1, "starts");
  const auto ends = ints_of(g, n, 2, "ends");
  const auto axes = ints_of(g, n, 3, "axes");
  const auto steps = ints_of(g, n, 4, "steps");
  if (!starts || !ends || !axes || !steps) return nullptr;
  const size_t elem = dtype_size(xp->dtype);
  const std::vector<shape_math::SliceDim> dims =
      shape_math::resolve_slice(n, xp->shape, *starts, *ends, *axes, *steps);
  const std::vector<int64_t> xs = byte_strides(xp->shape, elem);
  BoxCopy box;
  box.run = elem;
  Shape y;
  for (size_t k = 0; k < dims.size(); ++k) {
    y.push_back(dims[k].size);
    box.src.push_back(xs[k] * dims[k].step);
    if (dims[k].size > 0) box.src_offset += xs[k] * dims[k].start;
  }
  box.dims = y;
  box.dst = byte_strides(y, elem);
  return std::make_unique<BoxCopyStep>(n, std::move(box));
}

// Gather by constant indices in arithmetic progression (one index: a qkv[0] picking the
// queries; a run of them: a Slice): a box copy whose axis steps by the progression's stride.
std::unique_ptr<Step> lower_gather(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  const ValueInfo* xp = moved_value(ctx);
  if (!xp || n.inputs.size() != 2) return nullptr;
  const Tensor* ind = g.constant(n.inputs[1]);
  if (!ind || ind->numel() < 1) return nullptr;
  const Shape& x = xp->shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return nullptr;
  const int64_t dim = x[static_cast<size_t>(axis)];
  std::vector<int64_t> idx = ind->to_int64_vector();
  for (int64_t& v : idx) {
    if (v < -dim || v >= dim) return nullptr;  // the reference kernel reports it
    if (v < 0) v += dim;
  }
  const int64_t step = idx.size() > 1 ? idx[1] - idx[0] : 1;
  for (size_t i = 1; i < idx.size(); ++i)
    if (idx[i] - idx[i - 1] != step) return nullptr;
  const size_t elem = dtype_size(xp->dtype);
  const std::vector<int64_t> xs = byte_strides(x, elem);
  BoxCopy box;
  box.run = elem;
  box.dims = x;
  box.dims[static_cast<size_t>(axis)] = static_cast<int64_t>(idx.size());
  box.src = xs;
  box.src[static_cast<size_t>(axis)] = xs[static_cast<size_t>(axis)] * step;
  box.src_offset = xs[static_cast<size_t>(axis)] * idx[0];
  box.dst = byte_strides(box.dims, elem);  // the output, its index dimensions flattened
  return std::make_unique<BoxCopyStep>(n, std::move(box));
}

// Pad in constant mode with non-negative pads (a constant input, or the attribute before
// opset 11; optional constant axes): the output filled with the value, then the input copied
// into its interior.
std::unique_ptr<Step> lower_pad(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.op != "Pad" || n.attr_string("mode", "constant") != "constant") return nullptr;
  const ValueInfo* xp = moved_value(ctx);
  if (!xp) return nullptr;
  const ValueInfo& x = *xp;
  const size_t r = x.shape.size(), elem = dtype_size(x.dtype);
  const auto pads = ints_of(g, n, 1, "pads");
  const auto axes = ints_of(g, n, 3, "axes");
  if (!pads || !axes) return nullptr;
  const size_t na = axes->empty() ? r : axes->size();
  if (pads->size() != 2 * na) return nullptr;
  std::vector<int64_t> begin(r, 0);
  for (size_t i = 0; i < na; ++i) {
    int64_t a = axes->empty() ? static_cast<int64_t>(i) : (*axes)[i];
    if (a < 0) a += static_cast<int64_t>(r);
    if (a < 0 || a >= static_cast<int64_t>(r) || (*pads)[i] < 0 || (*pads)[i + na] < 0)
      return nullptr;
    begin[static_cast<size_t>(a)] = (*pads)[i];
  }
  // The constant as one element of x's type.
  std::vector<unsigned char> fill(elem, 0);
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* v = g.constant(n.inputs[2]);
    if (!v || v->dtype() != x.dtype || v->numel() != 1) return nullptr;
    std::memcpy(fill.data(), v->raw(), elem);
  } else if (n.has_attr("value")) {
    const Tensor v = Tensor::scalar_f32(n.attr_float("value", 0.f)).cast(x.dtype);
    std::memcpy(fill.data(), v.raw(), elem);
  }
  const Shape& y = g.value(n.outputs[0]).shape;
  BoxCopy box;
  box.run = elem;
  box.dims = x.shape;
  box.src = byte_strides(x.shape, elem);
  box.dst = byte_strides(y, elem);
  for (size_t k = 0; k < r; ++k) box.dst_offset += begin[k] * box.dst[k];
  return std::make_unique<BoxCopyStep>(n, std::move(box), std::move(fill),
                                       static_cast<size_t>(shape_numel(y)) * elem);
}

}  // namespace dlas::plan
