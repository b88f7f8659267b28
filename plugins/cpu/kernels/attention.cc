// scaled_dot_product_attention and rotary_embedding. f32 (and f16, bf16,
// computed in f32) attention is one fused pass per block of queries (flash
// attention) on register tiles; f64 runs OpenBLAS dgemm per block of queries
// with a softmax between. rotary_embedding is a loop parallelised with
// OpenMP. README.md says why.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/blas.h"
#include "kernels/kernel.h"
#include "kernels/simd.h"
#include "kernels/vmath.h"

namespace oar::cpu {
namespace {

// --- scaled_dot_product_attention, rotary_embedding ----------------------------

struct Attention {
  int64_t batch, lq, lk, d, dv;
  double scale;
  bool causal;
  int64_t shift;  // a causal row i sees keys j <= i + shift
};

// A masked softmax of each of |rows| rows of |width| scores, row r seeing
// its first |seen(r)| (the rest set to 0): the maximum (NaN if any is NaN) is
// subtracted before exp, the sum is in double.
template <typename F, typename Seen>
void attention_softmax(F* scores, int64_t rows, int64_t width, Seen&& seen) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t visible = seen(r);
    F* row = scores + r * width;
    if (visible > 0) {
      F max = row[0];
      for (int64_t j = 1; j < visible; ++j) {
        if (row[j] > max || std::isnan(row[j])) max = row[j];
      }
      double sum = 0;
      for (int64_t j = 0; j < visible; ++j) sum += std::exp(row[j] - max);
      const F scale = F(1 / sum);
      for (int64_t j = 0; j < visible; ++j) row[j] = std::exp(row[j] - max) * scale;
    }
    std::fill(row + visible, row + width, F(0));
  }
}

// --- f32: one fused pass (flash attention) --------------------------------------
//
// Per batch item and block of kQueryBlock queries (in parallel, dynamically
// handed out; a block's result does not depend on the thread that computes
// it), over blocks of kKeyBlock keys: the block's scores, transposed (keys x
// queries: k's rows are read as they are, only the queries are packed, once
// per block of queries), as (scale log2(e) q) k^T on register tiles, so
// that the softmax's e^(x - m) is 2^(x' - m') (exp2_nonpositive_f32), each
// query's maximum over the block taken from the tiles' registers where no
// key is masked; an online softmax vectorized over the queries (each query's
// running maximum m and sum l; what a query accumulated is rescaled by
// 2^(m_old - m_new) when its maximum grows); acc += 2^(scores - m) v on
// register tiles; y = acc / l at the end. No GEMM packs the scores, and they
// stay in the core's cache.
// Sums across key blocks (l and acc) are in double, each block's in f32 (at
// most kKeyBlock terms), so long rows keep the accumulate tolerance. Masked
// keys are left out of a query's sums (not set to -inf), so that a query
// whose visible scores are all -inf is NaN as the reference's e^(-inf - -inf),
// and one that sees no key is 0.

// 16 f32 in a GCC/Clang vector: one AVX-512 register, two AVX2 or four SSE or
// NEON registers in the clone that runs. Never passed to or returned from a
// function (its ABI depends on the ISA).
typedef float F32x16 __attribute__((vector_size(64)));

constexpr int64_t kQueryBlock = 64;
constexpr int64_t kKeyBlock = 128;
constexpr int64_t kTileColumns = 32;  // register tiles: rows x 2 vectors

// Register tiles of 8 rows (16 accumulators) where the processor has
// AVX-512's 32 vector registers, else 4 rows (AVX2's 16 registers would
// spill 8 rows' accumulators).
bool wide_attention_tiles() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

// 2^x in f32 for x <= 0, -inf or NaN (a score in base 2 less its query's
// maximum): n = round(x) by adding 1.5 * 2^23, r = x - n (exact, |r| <= 1/2),
// 2^r as 1 + r P(r), P of degree 5 (a fit of relative error, within about
// 1 ulp of 2^r on [-1/2, 1/2]), times 2^n from its exponent bits. Below
// -126 (e^-87.3, far under any sum that has its maximum's 1 in it) it gives
// 0, so the exponent stays normal; -inf gives 0, NaN gives NaN.
inline float exp2_nonpositive_f32(float x) {
  constexpr float kShifter = 12582912.0f;
  const float clamped = x < -126.0f ? -126.0f : x;  // NaN stays NaN
  const float shifted = clamped + kShifter;
  const float n = shifted - kShifter;
  const float r = clamped - n;
  uint32_t bits, shifter_bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  std::memcpy(&shifter_bits, &kShifter, sizeof shifter_bits);
  // (n + 127) << 23, in unsigned arithmetic (a NaN's bits give any exponent,
  // and the result stays NaN through r).
  const uint32_t scale_bits = (bits - shifter_bits + 127u) << 23;
  float scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  float p = 1.5353362e-4f;
  p = p * r + 1.3398875e-3f;
  p = p * r + 9.6184369e-3f;
  p = p * r + 5.5503324e-2f;
  p = p * r + 2.4022648e-1f;
  p = p * r + 6.9314718e-1f;
  const float result = (p * r + 1.0f) * scale;
  return x < -126.0f ? 0.0f : result;
}

struct FlashBuffers {
  std::vector<float> qt, scores, v, zeros, limit, m, alpha, block_max, shift, block_sum;
  std::vector<double> acc, sum;
  FlashBuffers(int64_t d, int64_t dv_padded)
      : qt(size_t(d * kQueryBlock)),
        scores(size_t(kKeyBlock * kQueryBlock)),
        v(size_t(kKeyBlock * dv_padded)),
        zeros(size_t(std::max<int64_t>(d, 1))),
        limit(size_t(kQueryBlock)),
        m(size_t(kQueryBlock)),
        alpha(size_t(kQueryBlock)),
        block_max(size_t(kQueryBlock)),
        shift(size_t(kQueryBlock)),
        block_sum(size_t(kQueryBlock)),
        acc(size_t(kQueryBlock * dv_padded)),
        sum(size_t(kQueryBlock)) {}
};

// Queries [first, first + rows) of one batch item (rows <= kQueryBlock): q
// [lq, d], k [lk, d], v [lk, dv] and y [lq, dv] point at the item's matrices.
// kRows: the register tiles' rows.
template <int kRows>
inline __attribute__((always_inline)) void flash_attention_block(const float* q, const float* k,
                                                                 const float* v, float* y,
                                                                 int64_t first, int64_t rows,
                                                                 const Attention& s,
                                                                 FlashBuffers& w) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const int64_t d = s.d, dv = s.dv, lk = s.lk;
  const int64_t dv_padded = (dv + kTileColumns - 1) / kTileColumns * kTileColumns;
  // Queries are the scores' columns, a multiple of the tile's 32.
  const int64_t cols = (rows + kTileColumns - 1) / kTileColumns * kTileColumns;
  const int64_t rows_padded = (rows + kRows - 1) / kRows * kRows;
  // The scores in base 2 (scale log2(e) q k^T): the softmax's e^(x - m) is
  // 2^(x' - m'), one multiply less per score.
  const float scale = float(s.scale * 1.4426950408889634);
  float* qt = w.qt.data();
  float* st = w.scores.data();
  float *limit = w.limit.data(), *m = w.m.data(), *alpha = w.alpha.data();
  float *block_max = w.block_max.data(), *shift = w.shift.data(), *block_sum = w.block_sum.data();
  double* acc = w.acc.data();
  double* l = w.sum.data();
  for (int64_t c = 0; c < d; ++c) {
    for (int64_t i = 0; i < cols; ++i)
      qt[c * cols + i] = i < rows ? scale * q[(first + i) * d + c] : 0;
  }
  for (int64_t i = 0; i < cols; ++i) m[i] = -kInf, l[i] = 0;
  std::fill(acc, acc + rows_padded * dv_padded, 0.0);
  // Query i sees keys j < visible(i); the block's last query sees the most.
  auto visible = [&](int64_t i) {
    return s.causal ? std::clamp<int64_t>(first + i + s.shift + 1, 0, lk) : lk;
  };
  const int64_t keys = visible(rows - 1);
  for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
    const int64_t width = std::min(kKeyBlock, keys - j0);
    // limit[i] of the block's keys are visible to query i.
    bool all_visible = true;  // no mask in this block (padding queries take any)
    for (int64_t i = 0; i < cols; ++i) {
      const int64_t n = i < rows ? std::clamp<int64_t>(visible(i) - j0, 0, width) : width;
      all_visible = all_visible && n == width;
      limit[i] = float(n);
      block_max[i] = -kInf;
      block_sum[i] = 0;
    }
    // st[j][i] = sum_c k[j0 + j][c] qt[c][i] on tiles of kRows keys x 32
    // queries; without a mask, each query's maximum over the block from the
    // tiles' registers (a NaN score is left out: its 2^NaN makes the query's
    // sum NaN all the same).
    for (int64_t j = 0; j < width; j += kRows) {
      const float* kr[kRows];
      for (int r = 0; r < kRows; ++r) kr[r] = j + r < width ? k + (j0 + j + r) * d : w.zeros.data();
      for (int64_t i = 0; i < cols; i += kTileColumns) {
        F32x16 a[kRows][2] = {};
        const float* qc = qt + i;
        for (int64_t c = 0; c < d; ++c, qc += cols) {
          F32x16 q0, q1;
          std::memcpy(&q0, qc, sizeof q0);
          std::memcpy(&q1, qc + 16, sizeof q1);
          for (int r = 0; r < kRows; ++r) {
            a[r][0] += kr[r][c] * q0;
            a[r][1] += kr[r][c] * q1;
          }
        }
        const int valid = int(std::min<int64_t>(kRows, width - j));
        for (int r = 0; r < valid; ++r) {
          std::memcpy(st + (j + r) * cols + i, &a[r][0], sizeof a[r][0]);
          std::memcpy(st + (j + r) * cols + i + 16, &a[r][1], sizeof a[r][1]);
        }
        if (all_visible) {
          F32x16 m0, m1;
          std::memcpy(&m0, block_max + i, sizeof m0);
          std::memcpy(&m1, block_max + i + 16, sizeof m1);
          for (int r = 0; r < valid; ++r) {
            m0 = a[r][0] > m0 ? a[r][0] : m0;
            m1 = a[r][1] > m1 ? a[r][1] : m1;
          }
          std::memcpy(block_max + i, &m0, sizeof m0);
          std::memcpy(block_max + i + 16, &m1, sizeof m1);
        }
      }
    }
    // The online softmax, over the queries: the visible scores become
    // 2^(score - m), the rest 0.
    if (!all_visible) {
      for (int64_t j = 0; j < width; ++j) {
        const float* row = st + j * cols;
        const float jf = float(j);
        for (int64_t i = 0; i < cols; ++i) {
          const float x = row[i];
          block_max[i] = jf < limit[i] && (x > block_max[i] || x != x) ? x : block_max[i];
        }
      }
    }
    for (int64_t i = 0; i < cols; ++i) {
      const float previous = m[i], b = block_max[i];
      const float now = b > previous || b != b ? b : previous;
      shift[i] = now == -kInf ? 0.0f : now;  // all -inf so far: their e^-inf = 0
      alpha[i] = limit[i] > 0 ? exp2_nonpositive_f32(previous - shift[i]) : 1.0f;
      m[i] = limit[i] > 0 ? now : previous;
    }
    if (all_visible) {
      for (int64_t j = 0; j < width; ++j) {
        float* row = st + j * cols;
        for (int64_t i = 0; i < cols; ++i) {
          const float e = exp2_nonpositive_f32(row[i] - shift[i]);
          row[i] = e;
          block_sum[i] += e;
        }
      }
    } else {
      for (int64_t j = 0; j < width; ++j) {
        float* row = st + j * cols;
        const float jf = float(j);
        for (int64_t i = 0; i < cols; ++i) {
          const float e = jf < limit[i] ? exp2_nonpositive_f32(row[i] - shift[i]) : 0.0f;
          row[i] = e;
          block_sum[i] += e;
        }
      }
    }
    for (int64_t i = 0; i < cols; ++i) l[i] = double(alpha[i]) * l[i] + double(block_sum[i]);
    // v of the block, rows of dv_padded (the padding stays 0) unless dv fits.
    const float* vb = v + j0 * dv;
    int64_t v_stride = dv;
    if (dv != dv_padded) {
      for (int64_t j = 0; j < width; ++j) {
        std::copy(vb + j * dv, vb + (j + 1) * dv, w.v.data() + j * dv_padded);
      }
      vb = w.v.data();
      v_stride = dv_padded;
    }
    // acc = alpha acc + p v on tiles of kRows queries x 32 columns.
    for (int64_t i = 0; i < rows_padded; i += kRows) {
      for (int64_t c0 = 0; c0 < dv_padded; c0 += kTileColumns) {
        F32x16 a[kRows][2] = {};
        const float* vj = vb + c0;
        const float* pj = st + i;
        for (int64_t j = 0; j < width; ++j, vj += v_stride, pj += cols) {
          F32x16 v0, v1;
          std::memcpy(&v0, vj, sizeof v0);
          std::memcpy(&v1, vj + 16, sizeof v1);
          for (int r = 0; r < kRows; ++r) {
            a[r][0] += pj[r] * v0;
            a[r][1] += pj[r] * v1;
          }
        }
        float tile[kRows][kTileColumns];
        std::memcpy(&tile[0][0], &a[0][0], sizeof tile);
        for (int r = 0; r < kRows; ++r) {
          double* out = acc + (i + r) * dv_padded + c0;
          const double rescale = alpha[i + r];
          for (int64_t c = 0; c < kTileColumns; ++c) out[c] = rescale * out[c] + double(tile[r][c]);
        }
      }
    }
  }
  for (int64_t i = 0; i < rows; ++i) {
    float* out = y + (first + i) * dv;
    if (visible(i) == 0) {
      std::fill(out, out + dv, 0.0f);
      continue;
    }
    const double inverse = 1 / l[i];  // l = 0 (all scores -inf): 0 * inf = NaN
    for (int64_t c = 0; c < dv; ++c) out[c] = float(acc[i * dv_padded + c] * inverse);
  }
}

OAR_CPU_WIDEST_SIMD void flash_attention_f32(const float* q, const float* k, const float* v,
                                             float* y, int64_t first, int64_t rows,
                                             const Attention& s, FlashBuffers& w, bool wide) {
  if (wide) {
    flash_attention_block<8>(q, k, v, y, first, rows, s, w);
  } else {
    flash_attention_block<4>(q, k, v, y, first, rows, s, w);
  }
}

// Per batch item and block of queries (in parallel, one block per thread at
// a time): scores = q_block k^T * scale (gemm), a masked softmax per row,
// y_block = scores v (gemm). A block's scores are at most kAttentionScores
// elements, so they stay in the core's cache between the two GEMMs, and a
// causal block only computes the keys its last row sees. With |causal|, row
// i sees keys j <= i + shift (lk - lq bottom-right aligned, 0 top-left); a
// row that sees none gives zeros. f32 (and f16, bf16, computed in f32) take
// flash_attention_f32 instead.
constexpr int64_t kAttentionScores = int64_t(1) << 17;

template <typename T>
void attention_run(View q, View k, View v, View y, Attention s) {
  using F = blas_t<T>;
  std::vector<F> q_buffer, k_buffer, v_buffer, y_buffer;
  const F* pq = to_blas(q.ptr<T>(), q.numel(), q_buffer);
  const F* pk = to_blas(k.ptr<T>(), k.numel(), k_buffer);
  const F* pv = to_blas(v.ptr<T>(), v.numel(), v_buffer);
  F* py = blas_output(y.ptr<T>(), y.numel(), y_buffer);
  if constexpr (std::is_same_v<F, float>) {
    const int64_t blocks = (s.lq + kQueryBlock - 1) / kQueryBlock, items = s.batch * blocks;
    const int64_t dv_padded = (s.dv + kTileColumns - 1) / kTileColumns * kTileColumns;
    const bool wide = wide_attention_tiles();
#pragma omp parallel if (items > 1 && s.lq * s.lk * (s.d + s.dv) > kParallelWork)
    {
      FlashBuffers buffers(s.d, dv_padded);
#pragma omp for schedule(dynamic)
      for (int64_t item = 0; item < items; ++item) {
        const int64_t b = item / blocks, i0 = item % blocks * kQueryBlock;
        flash_attention_f32(pq + b * s.lq * s.d, pk + b * s.lk * s.d, pv + b * s.lk * s.dv,
                            py + b * s.lq * s.dv, i0, std::min(kQueryBlock, s.lq - i0), s, buffers,
                            wide);
      }
    }
  } else {
    const int64_t block = std::clamp<int64_t>(kAttentionScores / std::max<int64_t>(s.lk, 1), 16,
                                              std::max<int64_t>(s.lq, 1));
    const int64_t blocks = (s.lq + block - 1) / block, items = s.batch * blocks;
    const int64_t threads = omp_get_max_threads();
    std::vector<F> scores(size_t(threads * block * s.lk));
    F* all_scores = scores.data();
#pragma omp parallel for num_threads(int(threads)) \
    schedule(dynamic) if (items > 1 && s.lq * s.lk * (s.d + s.dv) > kParallelWork)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t b = item / blocks, i0 = item % blocks * block;
      const int64_t rows = std::min(s.lq, i0 + block) - i0;
      // The keys the block's last row sees (all of them without |causal|).
      const int64_t keys = s.causal ? std::clamp<int64_t>(i0 + rows + s.shift, 0, s.lk) : s.lk;
      F* p = all_scores + omp_get_thread_num() * block * s.lk;
      F* out = py + (b * s.lq + i0) * s.dv;
      gemm_ld(false, true, rows, keys, s.d, F(s.scale), pq + (b * s.lq + i0) * s.d, s.d,
              pk + b * s.lk * s.d, s.d, F(0), p, keys);
      attention_softmax(p, rows, keys, [&](int64_t r) {
        return s.causal ? std::clamp<int64_t>(i0 + r + s.shift + 1, 0, s.lk) : s.lk;
      });
      gemm_ld(false, false, rows, s.dv, keys, F(1), p, keys, pv + b * s.lk * s.dv, s.dv, F(0), out,
              s.dv);
    }
  }
  from_blas(py, y.ptr<T>(), y.numel());
}

void attention_kernel(KernelContext& context) {
  View q = context.inputs[0], k = context.inputs[1], v = context.inputs[2];
  View y = context.outputs[0];
  int r = q.ndim;
  int64_t batch = 1;
  for (int dim = 0; dim < r - 2; ++dim) batch *= q.shape[dim];
  Attention s{batch,
              q.shape[r - 2],
              k.shape[r - 2],
              q.shape[r - 1],
              v.shape[r - 1],
              context.attrs.get_float("scale"),
              context.attrs.get_bool("causal"),
              0};
  if (context.attrs.get_string("causal_alignment") != "top_left") s.shift = s.lk - s.lq;
  if (s.scale == 0) s.scale = 1 / std::sqrt(double(s.d));
  if (y.numel() == 0) return;
  require_blas_sizes("scaled_dot_product_attention", {s.lq, s.lk, s.d, s.dv});
  with_float(q.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { attention_run<T>(q, k, v, y, s); });
  });
}

// Pairs (first, second) of the last dimension, (i, i + D/2) or with
// |interleaved| (2i, 2i + 1), rotated by row s of the tables for position s.
template <typename T>
void rotary_run(View x, View cos, View sin, View y, bool interleaved) {
  int64_t d = x.shape[x.ndim - 1], positions = x.shape[x.ndim - 2], half = d / 2;
  int64_t rows = x.numel() / d;
#pragma omp parallel for if (x.numel() > kParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = x.ptr<T>() + r * d;
    T* out = y.ptr<T>() + r * d;
    const T* c = cos.ptr<T>() + r % positions * half;
    const T* s = sin.ptr<T>() + r % positions * half;
    for (int64_t i = 0; i < half; ++i) {
      int64_t first = interleaved ? 2 * i : i, second = interleaved ? 2 * i + 1 : i + half;
      compute_t<T> x1 = load(in + first), x2 = load(in + second), ci = load(c + i),
                   si = load(s + i);
      store(out + first, x1 * ci - x2 * si);
      store(out + second, x2 * ci + x1 * si);
    }
  }
}

void rotary_kernel(KernelContext& context) {
  View x = context.inputs[0], cos = context.inputs[1], sin = context.inputs[2];
  View y = context.outputs[0];
  bool interleaved = context.attrs.get_bool("interleaved");
  if (x.numel() == 0) return;
  with_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { rotary_run<T>(x, cos, sin, y, interleaved); });
  });
}

}  // namespace

void register_attention_kernels(const oar::sdk::KernelRegistrar& registrar,
                                AllocationTable* table) {
  auto same = [](size_t inputs) { return same_signatures(ops::kFloats, inputs, 1); };
  register_op(registrar, "scaled_dot_product_attention", &attention_kernel, same(3), 0, table);
  register_op(registrar, "rotary_embedding", &rotary_kernel, same(3), 0, table);
}

}  // namespace oar::cpu
