// The f32 SpMM kernel table (derived from f32_spmm.inc), weight packing and the scalar
// reference of the contract.
#include <cstring>
#include <limits>

#include "algo/microkernels/f32-spmm/f32_spmm.h"
#include "dlas/core/error.h"

namespace dlas::ukernel {

const std::vector<F32SpmmUkernel>& f32_spmm_ukernels() {
  static const std::vector<F32SpmmUkernel> table = {
#define X(fn, isa, lanes, nv, br, bc) \
  {#fn, Isa::isa, lanes, nv, br, bc, &fn, bc == 1 ? &fn##_rows : nullptr},
#include "algo/microkernels/f32-spmm/f32_spmm.inc"
#undef X
  };
  return table;
}

const F32SpmmUkernel* find_f32_spmm(Isa isa, SparseBlock block, int nv) {
  for (int level = static_cast<int>(isa); level >= 0; --level) {
    const F32SpmmUkernel* best = nullptr;  // most vectors <= nv, else the fewest
    for (const F32SpmmUkernel& u : f32_spmm_ukernels()) {
      if (static_cast<int>(u.isa) != level || u.br != block.rows || u.bc != block.cols) continue;
      if (!best) {
        best = &u;
      } else if (u.nv <= nv) {
        if (best->nv > nv || u.nv > best->nv) best = &u;
      } else if (best->nv > nv && u.nv < best->nv) {
        best = &u;
      }
    }
    if (best) return best;
  }
  return nullptr;
}

namespace {

F32SpmmPacked pack(const SparseMatrix& m, const float* bias, int64_t in_stride,
                   const std::vector<int64_t>* row_off) {
  validate_sparse(m);
  const int64_t br = m.block.rows, bc = m.block.cols;
  DLAS_CHECK(m.cols >= bc, ErrorKind::kUnsupported, "spmm pack: ", m.cols,
             " input rows is fewer than the block's ", bc);
  F32SpmmPacked pk;
  pk.block = m.block;
  pk.rows = m.rows;
  const int64_t nbr = m.block_rows();
  pk.w.reserve(static_cast<size_t>(nbr * br) + m.values.size());
  pk.dmap.reserve(static_cast<size_t>(m.nnz_blocks()));
  const int64_t max_off = std::numeric_limits<int32_t>::max();
  for (int64_t b = 0; b < nbr; ++b) {
    pk.w_off.push_back(static_cast<int64_t>(pk.w.size()));
    pk.d_off.push_back(static_cast<int64_t>(pk.dmap.size()));
    for (int64_t i = 0; i < br; ++i) {
      const int64_t k = b * br + i;
      pk.w.push_back(bias && k < m.rows ? bias[k] : 0.f);
    }
    int64_t prev = 0;  // byte offset of the input pointer
    for (int64_t z = m.row_ptr[b]; z < m.row_ptr[b + 1]; ++z) {
      const int64_t c0 = m.block_col(z) * bc;
      const int64_t base = c0 + bc <= m.cols ? c0 : m.cols - bc;  // stay inside the input
      const float* v = m.values.data() + z * br * bc;
      const size_t w0 = pk.w.size();
      pk.w.resize(w0 + static_cast<size_t>(br * bc), 0.f);
      for (int64_t j = 0; j < bc; ++j)
        for (int64_t i = 0; i < br; ++i)
          if (c0 + j < m.cols)
            pk.w[w0 + static_cast<size_t>((c0 + j - base) * br + i)] = v[i * bc + j];
      const int64_t off = (row_off ? (*row_off)[static_cast<size_t>(base)] : base * in_stride) *
                          static_cast<int64_t>(sizeof(float));
      DLAS_CHECK(off <= max_off && off - prev >= -max_off, ErrorKind::kUnsupported,
                 "spmm pack: input offset ", off, " bytes overflows int32");
      pk.dmap.push_back(static_cast<int32_t>(off - prev));
      prev = off;
    }
    pk.nnz.push_back(static_cast<uint32_t>(m.row_ptr[b + 1] - m.row_ptr[b]));
  }
  pk.w_off.push_back(static_cast<int64_t>(pk.w.size()));
  pk.d_off.push_back(static_cast<int64_t>(pk.dmap.size()));
  return pk;
}

}  // namespace

F32SpmmPacked pack_f32_spmm(const SparseMatrix& m, const float* bias, int64_t in_stride) {
  return pack(m, bias, in_stride, nullptr);
}

F32SpmmPacked pack_f32_spmm(const SparseMatrix& m, const float* bias,
                            const std::vector<int64_t>& row_off) {
  DLAS_CHECK(m.block.cols == 1, ErrorKind::kInternal, "spmm pack: row offsets need BC = 1");
  DLAS_CHECK(static_cast<int64_t>(row_off.size()) == m.cols, ErrorKind::kInternal,
             "spmm pack: ", row_off.size(), " row offsets for ", m.cols, " rows");
  return pack(m, bias, 0, &row_off);
}

void f32_spmm_reference(size_t pixels, size_t rows, size_t cols, const float* in,
                        size_t in_stride_floats, const float* w, const float* bias, float* out,
                        size_t out_stride, float min, float max) {
  for (size_t k = 0; k < rows; ++k)
    for (size_t p = 0; p < pixels; ++p) {
      double acc = bias ? bias[k] : 0.f;
      for (size_t r = 0; r < cols; ++r)
        if (w[k * cols + r] != 0.f)
          acc += static_cast<double>(w[k * cols + r]) * in[r * in_stride_floats + p];
      float v = static_cast<float>(acc);
      v = v < min ? min : v;
      out[k * out_stride + p] = v > max ? max : v;
    }
}

}  // namespace dlas::ukernel
