// Elementwise entry points: broadcast classification, ISA dispatch, and the split of the
// flat output into chunks for the ThreadPool.
#include "dlas/algo/eltwise.h"

#include <algorithm>

#include "algo/microkernels/f32-vbinary/f32_vbinary.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {

namespace {

// The full operand viewed as [P][Q][R] with the small one indexed by q.
struct Pattern {
  bool ok = false;
  bool a_full = true;  // which operand has the output shape
  int64_t q = 1, r = 1, total = 0;
};

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// small matches full on dims [lo, hi) (right-aligned) and is 1 elsewhere; dims where full
// is 1 fit either way.
bool fits(const Shape& full, const Shape& small, int64_t& q, int64_t& r) {
  if (small.size() > full.size()) return false;
  const size_t off = full.size() - small.size();
  auto sdim = [&](size_t i) { return i < off ? int64_t{1} : small[i - off]; };
  // Dimensions of full that are not 1: each is either matched (small equal) or
  // broadcast (small 1); the matched ones must be contiguous among them.
  int state = 0;  // 0 before the matched run, 1 inside it, 2 after it
  q = 1, r = 1;
  for (size_t i = 0; i < full.size(); ++i) {
    const int64_t f = full[i], s = sdim(i);
    if (s != f && s != 1) return false;
    if (f == 1) continue;
    if (s == f) {
      if (state == 2) return false;
      state = 1;
      q *= f;
    } else {
      if (state == 1) state = 2;
      if (state == 2) r *= f;
    }
  }
  if (state == 0) r = numel(full);  // a scalar: one run over everything
  return true;
}

Pattern classify(const Shape& as, const Shape& bs) {
  Pattern p;
  int64_t q, r;
  // Prefer a full `a` (covers same shape); else a full `b`. The output must be the full
  // operand's shape, so the other may not have more elements in any dim.
  if (fits(as, bs, q, r)) {
    p.ok = true, p.a_full = true;
  } else if (fits(bs, as, q, r)) {
    p.ok = true, p.a_full = false;
  } else {
    return p;
  }
  p.q = q, p.r = r, p.total = numel(p.a_full ? as : bs);
  return p;
}

// Any other broadcast whose last dimension both operands have in full (a window-attention
// mask [1, W, 1, N, N] against its scores [1, W, H, N, N]): rows of `len` elements, each
// operand's row found from the output row's index.
struct RowPattern {
  bool ok = false;
  int64_t len = 1, rows = 0;
  Shape outer;                  // the output's dimensions before the row
  std::vector<int64_t> sa, sb;  // each operand's element stride per outer dimension
};

RowPattern classify_rows(const Shape& as, const Shape& bs) {
  RowPattern p;
  const size_t r = std::max(as.size(), bs.size());
  if (r == 0) return p;
  auto dim = [r](const Shape& s, size_t i) {
    return i + s.size() >= r ? s[i + s.size() - r] : int64_t{1};
  };
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t a = dim(as, i), b = dim(bs, i);
    if (a != b && a != 1 && b != 1) return p;
    out[i] = std::max(a, b);
  }
  // The row: the trailing dimensions both operands have in full.
  size_t first = r;
  while (first > 0 && dim(as, first - 1) == out[first - 1] && dim(bs, first - 1) == out[first - 1])
    --first;
  if (first == r) return p;
  for (size_t i = first; i < r; ++i) p.len *= out[i];
  p.outer.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(first));
  p.sa.assign(first, 0);
  p.sb.assign(first, 0);
  int64_t st_a = p.len, st_b = p.len;
  for (size_t i = first; i-- > 0;) {
    const int64_t a = dim(as, i), b = dim(bs, i);
    p.sa[i] = a == 1 ? 0 : st_a;
    p.sb[i] = b == 1 ? 0 : st_b;
    st_a *= a;
    st_b *= b;
  }
  p.rows = numel(p.outer);
  p.ok = true;
  return p;
}

// Chunks of the flat range: about 4 per thread, none smaller than 16K elements.
template <class Fn>
void for_chunks(ThreadPool& pool, int64_t total, Fn&& fn) {
  const int64_t by_size = (total + 16383) / 16384;
  const int64_t chunks =
      std::max<int64_t>(1, std::min<int64_t>(by_size, 4 * static_cast<int64_t>(pool.threads())));
  pool.parallel_for(static_cast<size_t>(chunks), [&](size_t i) {
    fn(total * static_cast<int64_t>(i) / chunks, total * static_cast<int64_t>(i + 1) / chunks);
  });
}

}  // namespace

bool binary_supported(const Shape& a, const Shape& b) {
  return classify(a, b).ok || classify_rows(a, b).ok;
}

bool binary(Isa isa, BinaryOp op, const float* a, const Shape& as, const float* b, const Shape& bs,
            float* y, ThreadPool& pool) {
  const Pattern pt = classify(as, bs);
  const auto& k = ukernel::f32_vbinary_for(isa);
  const int o = static_cast<int>(op);
  if (!pt.ok) {
    const RowPattern rp = classify_rows(as, bs);
    if (!rp.ok) return false;
    // Rows in chunks of about 16K elements, each row's operands found by its index digits.
    const int64_t per = std::max<int64_t>(1, 16384 / rp.len);
    pool.parallel_for(static_cast<size_t>((rp.rows + per - 1) / per), [&](size_t c) {
      const int64_t r0 = static_cast<int64_t>(c) * per, r1 = std::min(rp.rows, r0 + per);
      for (int64_t row = r0; row < r1; ++row) {
        int64_t oa = 0, ob = 0, rest = row;
        for (size_t i = rp.outer.size(); i-- > 0;) {
          const int64_t d = rest % rp.outer[i];
          rest /= rp.outer[i];
          oa += d * rp.sa[i];
          ob += d * rp.sb[i];
        }
        k.vv[o](static_cast<size_t>(rp.len), a + oa, b + ob, y + row * rp.len);
      }
    });
    return true;
  }
  const float* full = pt.a_full ? a : b;
  const float* small = pt.a_full ? b : a;
  const int64_t q = pt.q, r = pt.r;
  for_chunks(pool, pt.total, [&](int64_t begin, int64_t end) {
    int64_t i = begin;
    while (i < end) {
      if (r == 1) {
        // The small operand runs along with the full one: vector-vector segments.
        const int64_t off = i % q, len = std::min(q - off, end - i);
        if (pt.a_full)
          k.vv[o](static_cast<size_t>(len), full + i, small + off, y + i);
        else
          k.vv[o](static_cast<size_t>(len), small + off, full + i, y + i);
        i += len;
      } else {
        // One small element per run of r outputs: vector-scalar segments.
        const int64_t row = i / r, len = std::min(r - i % r, end - i);
        const float* s = small + row % q;
        if (pt.a_full)
          k.vs[o](static_cast<size_t>(len), full + i, s, y + i);
        else
          k.sv[o](static_cast<size_t>(len), s, full + i, y + i);
        i += len;
      }
    }
  });
  return true;
}

void unary_activation(Isa isa, Activation act, float p0, float p1, size_t n, const float* x,
                      float* y, ThreadPool& pool) {
  const Epilogue e{act, p0, p1, false};
  for_chunks(pool, static_cast<int64_t>(n), [&](int64_t begin, int64_t end) {
    if (x != y) std::copy(x + begin, x + end, y + begin);
    apply_epilogue(isa, e, static_cast<size_t>(end - begin), y + begin, 0.f, nullptr);
  });
}

}  // namespace dlas
