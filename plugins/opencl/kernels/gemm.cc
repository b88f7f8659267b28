// matmul through the tiled GEMM of kernels/gemm.cl: the operands' strides,
// batch broadcasting and transposes become mm_t; the tile shape is chosen per
// device (CPU or GPU) and written as #defines before the kernel text, so each
// device builds the kernel specialised for its shape (README.md, "matmul").
// A backend whose programs are compiled offline (level_zero) has the
// sources' default shape, kGpuTiles, only.
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <string>

#include "kernels/kernel.h"

namespace oar::opencl {
namespace {

// Mirrors mm_t of kernels/gemm.cl.
struct Matmul {
  int64_t m, n, k;
  int64_t a_m, a_k, b_k, b_n;
  int64_t batch_rank;
  int64_t batch_shape[6];
  int64_t a_batch[6];
  int64_t b_batch[6];
  int64_t a_offset, b_offset, y_offset;
};

// The tile shape of gemm.cl: a work-group of lx x ly work-items, each with
// tm rows of nv vectors of vw columns; k in steps of bk.
struct Tiles {
  int lx, ly, tm, nv, vw, bk;
  int64_t rows() const { return int64_t(ly) * tm; }
  int64_t cols() const { return int64_t(lx) * nv * vw; }
};

// CPU implementations (PoCL, measured on AVX-512; docs/performance.md): few
// work-items, each with a 12 x 16 register tile (12 vector accumulators of
// 16 floats), which the compiler keeps in registers for a whole k step.
constexpr Tiles kCpuTiles{4, 4, 12, 1, 16, 32};
// GPUs: 256 work-items with 4 x 4 register tiles of float4 columns, a 64 x 64
// block and k steps of 16 (8 KiB of local memory for f32). gemm.cl's
// defaults (#ifndef GEMM_LX): the shape of the offline-compiled modules.
constexpr Tiles kGpuTiles{16, 16, 4, 1, 4, 16};

// OAR_OPENCL_GEMM="lx,ly,tm,nv,vw,bk" replaces the device's tile shape (for
// tuning, and to run the GPU shape on a CPU device in tests). Malformed values
// are logged and ignored.
const Tiles* tiles_from_environment() {
  static const Tiles* parsed = []() -> const Tiles* {
    const char* text = secure_getenv("OAR_OPENCL_GEMM");
    if (text == nullptr || *text == '\0') return nullptr;
    Tiles t{};
    char end = 0;
    int n =
        std::sscanf(text, "%d,%d,%d,%d,%d,%d%c", &t.lx, &t.ly, &t.tm, &t.nv, &t.vw, &t.bk, &end);
    bool vw_ok = t.vw == 1 || t.vw == 2 || t.vw == 4 || t.vw == 8 || t.vw == 16;
    bool ok = n == 6 && t.lx > 0 && t.ly > 0 && t.lx * t.ly <= 1024 && t.tm >= 1 && t.tm <= 16 &&
              (t.nv == 1 || t.nv == 2) && vw_ok && t.bk >= t.vw && t.bk % t.vw == 0 && t.bk <= 256;
    if (!ok) {
      std::fprintf(stderr,
                   "oar opencl: OAR_OPENCL_GEMM=\"%s\" ignored: want lx,ly,tm,nv,vw,bk with "
                   "tm 1..16, nv 1 or 2, vw 1/2/4/8/16 dividing bk\n",
                   text);
      return nullptr;
    }
    return new Tiles(t);  // lives until exit
  }();
  return parsed;
}

// The #defines of |t| to put before gemm.cl; one text per shape, built once.
const char* defines_for(const Tiles& t) {
  static std::mutex mutex;
  static std::string texts[3];
  static Tiles shapes[3];
  static int count = 0;
  std::lock_guard<std::mutex> lock(mutex);
  for (int i = 0; i < count; ++i) {
    const Tiles& s = shapes[i];
    if (s.lx == t.lx && s.ly == t.ly && s.tm == t.tm && s.nv == t.nv && s.vw == t.vw &&
        s.bk == t.bk) {
      return texts[i].c_str();
    }
  }
  if (count == 3) return texts[2].c_str();  // not reached: at most cpu, gpu, environment
  char defines[256];
  std::snprintf(defines, sizeof(defines),
                "#define GEMM_LX %d\n#define GEMM_LY %d\n#define GEMM_TM %d\n#define GEMM_NV %d\n"
                "#define GEMM_VW %d\n#define GEMM_BK %d\n#line 1\n",
                t.lx, t.ly, t.tm, t.nv, t.vw, t.bk);
  shapes[count] = t;
  texts[count] = defines;
  return texts[count++].c_str();
}

// Whether matmul takes the packed path of gemm.cl (gemm_pack_a, gemm_pack_b,
// gemm_packed): on CPU devices for f32 products of one matrix large enough
// that packing (one pass over a and b) is small next to the product.
// OAR_OPENCL_GEMM_PACK=1 takes it for every f32 product of one matrix, =0
// never (for tests and measurements).
bool packed_path(const DeviceTraits& device, const Matmul& p) {
  static const int forced = [] {
    const char* text = secure_getenv("OAR_OPENCL_GEMM_PACK");
    return text == nullptr || *text == '\0' ? -1 : (text[0] == '0' ? 0 : 1);
  }();
  if (forced >= 0) return forced == 1;
  return device.kind == OAR_DEVICE_KIND_CPU && p.m >= 32 && p.n >= 32 && p.k >= 32 &&
         double(p.m) * double(p.n) * double(p.k) >= double(1 << 21);
}

size_t round_up(int64_t value, int64_t step) { return size_t((value + step - 1) / step * step); }

// y = a b through panels in scratch memory (gemm.cl, "The packed path").
// False, with nothing enqueued, where the panels would be over 1 GiB or the
// scratch memory cannot be had: the tiled kernel needs none.
bool packed_matmul(KernelContext& context, const Tiles& t, const char* defines, const Matmul& p,
                   Buffer a, Buffer b, Buffer y) {
  static const KernelRef pack_a("gemm_pack_a"), pack_b("gemm_pack_b"), product("gemm_packed");
  const DLDataType dtype = context.outputs[0].dtype;
  const int64_t tn = int64_t(t.nv) * t.vw;
  const int64_t blocks = (p.m + t.tm - 1) / t.tm, panels = (p.n + tn - 1) / tn;
  const uint64_t a_bytes = uint64_t(blocks * t.tm * p.k) * sizeof(float);
  const uint64_t b_bytes = uint64_t(panels * tn * p.k) * sizeof(float);
  if (context.call->scratch_allocate == nullptr || a_bytes + b_bytes > (uint64_t(1) << 30)) {
    return false;
  }
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  oar_status_t status = context.call->scratch_allocate(context.call->scratch_context,
                                                       a_bytes + b_bytes + 128, &memory, &offset);
  if (status != OAR_STATUS_OK) return false;
  // The panels in the scratch allocation, 64-byte aligned (vector loads).
  Buffer scratch = static_cast<Buffer>(memory);
  const cl_long a_at = cl_long((offset + 63) / 64 * 64);
  const cl_long b_at = cl_long((uint64_t(a_at) + a_bytes + 63) / 64 * 64);
  size_t global_a[2] = {size_t(p.k), size_t(blocks)};
  context.launch_nd(KernelName{Source::kGemm, dtype, pack_a.name, &pack_a, defines}, 2, global_a,
                    nullptr, {a, p.a_offset, p.m, p.k, p.a_m, p.a_k, scratch, a_at});
  size_t global_b[2] = {size_t(panels), size_t(p.k)};
  context.launch_nd(KernelName{Source::kGemm, dtype, pack_b.name, &pack_b, defines}, 2, global_b,
                    nullptr, {b, p.b_offset, p.n, p.k, p.b_k, p.b_n, scratch, b_at});
  size_t global[2] = {round_up(panels, t.lx), round_up(blocks, t.ly)};
  size_t local[2] = {size_t(t.lx), size_t(t.ly)};
  context.launch_nd(KernelName{Source::kGemm, dtype, product.name, &product, defines}, 2, global,
                    local, {scratch, a_at, scratch, b_at, y, p.y_offset, p.m, p.n, p.k});
  return true;
}

const Tiles& tiles_of(const DeviceTraits& device) {
  if (!device.builds_at_run_time) {
    // The modules were compiled with gemm.cl's defaults, kGpuTiles.
    oar::sdk::require(size_t(kGpuTiles.lx) * size_t(kGpuTiles.ly) <= device.max_work_group_size,
                      OAR_STATUS_UNIMPLEMENTED,
                      "matmul: the device's work-groups are smaller than the 256 work-items of "
                      "gemm.cl's default tile shape, the only one compiled offline");
    return kGpuTiles;
  }
  const Tiles* forced = tiles_from_environment();
  const Tiles& t = forced != nullptr                    ? *forced
                   : device.kind == OAR_DEVICE_KIND_CPU ? kCpuTiles
                                                        : kGpuTiles;
  // A device with smaller work-groups gets the 16-work-item shape.
  return size_t(t.lx) * size_t(t.ly) <= device.max_work_group_size ? t : kCpuTiles;
}

void matmul_body(KernelContext& context) {
  const View& a = context.inputs[0];
  const View& b = context.inputs[1];
  const View& y = context.outputs[0];
  bool ta = context.attrs.get_bool("transpose_a");
  bool tb = context.attrs.get_bool("transpose_b");
  oar::sdk::require(a.ndim >= 2 && b.ndim >= 2 && y.ndim >= 2 && y.ndim - 2 <= 6,
                    OAR_STATUS_INVALID_ARGUMENT, "matmul: operands need rank 2 to 8");
  Matmul p{};
  int ar = a.ndim, br = b.ndim, yr = y.ndim;
  p.m = y.shape[yr - 2];
  p.n = y.shape[yr - 1];
  p.k = ta ? a.shape[ar - 2] : a.shape[ar - 1];
  p.a_m = ta ? a.strides[ar - 1] : a.strides[ar - 2];
  p.a_k = ta ? a.strides[ar - 2] : a.strides[ar - 1];
  p.b_k = tb ? b.strides[br - 1] : b.strides[br - 2];
  p.b_n = tb ? b.strides[br - 2] : b.strides[br - 1];
  p.batch_rank = yr - 2;
  int64_t batch = 1;
  for (int d = 0; d < yr - 2; ++d) {
    p.batch_shape[d] = y.shape[d];
    batch *= y.shape[d];
    int da = d - (yr - ar);
    int db = d - (yr - br);
    p.a_batch[d] = (da < 0 || a.shape[da] == 1) ? 0 : a.strides[da];
    p.b_batch[d] = (db < 0 || b.shape[db] == 1) ? 0 : b.strides[db];
  }
  p.a_offset = int64_t(a.offset);
  p.b_offset = int64_t(b.offset);
  p.y_offset = int64_t(y.offset);
  if (p.m == 0 || p.n == 0 || batch == 0) return;

  const DeviceTraits device = context.traits();
  uint32_t bit = ops::dtype_bit(y.dtype);
  if (bit == ops::kF64 && !device.fp64) {
    throw oar::sdk::Error(OAR_STATUS_UNIMPLEMENTED,
                          "matmul: the device has no fp64 (cl_khr_fp64), so no f64 kernels");
  }
  const Tiles& t = tiles_of(device);
  // The tile shape as #defines before gemm.cl where programs are built at run
  // time; the defaults otherwise.
  const char* defines = device.builds_at_run_time ? defines_for(t) : nullptr;
  static const KernelRef gemm("gemm");
  if (bit == ops::kF32 && batch == 1 && packed_path(device, p) &&
      packed_matmul(context, t, defines, p, a.memory, b.memory, y.memory)) {
    return;
  }
  size_t global[3] = {size_t((p.n + t.cols() - 1) / t.cols()) * size_t(t.lx),
                      size_t((p.m + t.rows() - 1) / t.rows()) * size_t(t.ly), size_t(batch)};
  size_t local[3] = {size_t(t.lx), size_t(t.ly), 1};
  context.launch_nd(KernelName{Source::kGemm, y.dtype, gemm.name, &gemm, defines}, 3, global, local,
                    {a.memory, b.memory, y.memory, p});
}

}  // namespace

void register_gemm_kernels(const oar::sdk::KernelRegistrar& registrar) {
  register_op(registrar, "matmul", matmul_body, same_signatures(ops::kFloats, 2, 1));
}

}  // namespace oar::opencl
