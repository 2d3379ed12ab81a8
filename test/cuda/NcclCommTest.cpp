//===- NcclCommTest.cpp - The NCCL collectives on device buffers ----------===//
//
// runtime/comm/nccl's kernels (weft_k_all_reduce, ... on GPU memory):
//
//   NcclCommTest      one rank on mesh [1, 1] ("dp", "pp"): every kernel on
//                     groups of one rank (device copies); with
//                     WEFT_NCCL_FORCE=1 the same through a one-rank NCCL
//                     communicator (the NCCL code paths, packing included);
//                     and the block copies and the average's division on
//                     several blocks, directly.
//   RANK=r WORLD_SIZE=2 LOCAL_RANK=r MASTER_ADDR=.. MASTER_PORT=..
//   NcclCommTest MODE one of two ranks on mesh [2] ("pp"), as
//                     nccl-two-ranks.sh starts them. MODE two-ranks: every
//                     collective against its expected result, and pipeline
//                     transfers crossing as in 1F1B; order-mismatch: the
//                     two ranks issue transfers in different orders, which
//                     must stop the job naming it; dead-peer: rank 1 dies
//                     and rank 0's all_reduce must end in a clear error
//                     instead of a hang.
//
// Without a GPU it prints SKIP and exits 77 (ctest: skipped). Two ranks on
// one GPU need NCCL 2.30 or newer with NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL
// refuses a GPU used twice otherwise): they skip the same way.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/nccl/NcclComm.h"
#include "runtime/comm/CollectiveCall.h"
#include "runtime/comm/nccl/NcclKernels.h"
#include "runtime/cuda/CudaRuntime.h"
#include "weft/runtime/Comm.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/KernelABI.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern "C" void weft_rt_device_comm_start(void);
extern "C" void weft_rt_device_comm_finish(void);

namespace {

using Kernel = void (*)(void *const *, const int64_t *);

int gPassed = 0, gFailed = 0;
int64_t gRank = 0;

void expect(bool ok, const std::string &what) {
  if (ok) {
    ++gPassed;
    return;
  }
  ++gFailed;
  std::printf("FAIL (rank %lld): %s\n", static_cast<long long>(gRank),
              what.c_str());
  std::fflush(stdout);
}

void check(cudaError_t err, const char *what) {
  if (err != cudaSuccess) {
    std::printf("FAIL (rank %lld): %s: %s\n", static_cast<long long>(gRank),
                what, cudaGetErrorString(err));
    std::exit(1);
  }
}

/// Device memory; the copies go through the compute stream, so they are
/// ordered with the kernels (and with the waits of the collectives).
class Buffer {
public:
  explicit Buffer(size_t bytes) : bytes_(bytes) {
    check(cudaMalloc(&ptr_, bytes ? bytes : 1), "cudaMalloc");
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { cudaFree(ptr_); }

  void *get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

  template <class T> void upload(const std::vector<T> &values) {
    check(cudaMemcpyAsync(ptr_, values.data(), values.size() * sizeof(T),
                          cudaMemcpyHostToDevice, weft::cuda::computeStream()),
          "upload");
    check(cudaStreamSynchronize(weft::cuda::computeStream()), "upload");
  }
  template <class T> std::vector<T> download(size_t count) const {
    std::vector<T> values(count);
    check(cudaMemcpyAsync(values.data(), ptr_, count * sizeof(T),
                          cudaMemcpyDeviceToHost, weft::cuda::computeStream()),
          "download");
    check(cudaStreamSynchronize(weft::cuda::computeStream()), "download");
    return values;
  }
  /// Enqueues a fill with byte `value` on the compute stream (a kernel
  /// after a *_start overwriting its operand).
  void scribble(int value) {
    check(cudaMemsetAsync(ptr_, value, bytes_, weft::cuda::computeStream()),
          "memset");
  }

private:
  void *ptr_ = nullptr;
  size_t bytes_;
};

struct Shape {
  int64_t dtype;
  std::vector<int64_t> dims;
};

std::vector<int64_t> desc(const std::vector<Shape> &tensors,
                          const std::vector<int64_t> &attrs) {
  std::vector<int64_t> d = {static_cast<int64_t>(tensors.size())};
  for (const Shape &t : tensors) {
    d.push_back(t.dtype);
    d.push_back(static_cast<int64_t>(t.dims.size()));
    d.insert(d.end(), t.dims.begin(), t.dims.end());
  }
  d.push_back(static_cast<int64_t>(attrs.size()));
  d.insert(d.end(), attrs.begin(), attrs.end());
  return d;
}

void run(Kernel kernel, std::vector<void *> bufs,
         const std::vector<int64_t> &d) {
  kernel(bufs.data(), d.data());
}

int64_t numel(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// comm_wait on `slot` for y (and y2 when given).
void commWait(int64_t slot, const Shape &shape, void *y, void *y2 = nullptr) {
  std::vector<Shape> tensors = {shape};
  std::vector<void *> bufs = {y};
  if (y2) {
    tensors.push_back(shape);
    bufs.push_back(y2);
  }
  run(weft_k_comm_wait, bufs, desc(tensors, {slot}));
}

std::string join(const std::vector<double> &v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 8; ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() > 8 ? ",..." : "");
}

/// Device values of any dtype as doubles.
std::vector<double> readAs(const Buffer &b, int64_t dtype, int64_t count) {
  std::vector<double> out(static_cast<size_t>(count));
  switch (dtype) {
  case WEFT_F32: {
    auto v = b.download<float>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = v[i];
    break;
  }
  case WEFT_F64: {
    auto v = b.download<double>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = v[i];
    break;
  }
  case WEFT_BF16: {
    auto v = b.download<uint16_t>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = weft::bfloat16ToFloat(v[i]);
    break;
  }
  case WEFT_I64: {
    auto v = b.download<int64_t>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<double>(v[i]);
    break;
  }
  case WEFT_I32: {
    auto v = b.download<int32_t>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = v[i];
    break;
  }
  default: {
    auto v = b.download<uint8_t>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = v[i];
    break;
  }
  }
  return out;
}

/// Uploads doubles as `dtype`.
void writeAs(Buffer &b, int64_t dtype, const std::vector<double> &values) {
  switch (dtype) {
  case WEFT_F32:
    b.upload(std::vector<float>(values.begin(), values.end()));
    break;
  case WEFT_F64:
    b.upload(values);
    break;
  case WEFT_BF16: {
    std::vector<uint16_t> v;
    for (double x : values)
      v.push_back(weft::floatToBFloat16(static_cast<float>(x)));
    b.upload(v);
    break;
  }
  case WEFT_I64: {
    std::vector<int64_t> v;
    for (double x : values)
      v.push_back(static_cast<int64_t>(x));
    b.upload(v);
    break;
  }
  case WEFT_I32: {
    std::vector<int32_t> v;
    for (double x : values)
      v.push_back(static_cast<int32_t>(x));
    b.upload(v);
    break;
  }
  default: {
    std::vector<uint8_t> v;
    for (double x : values)
      v.push_back(static_cast<uint8_t>(x));
    b.upload(v);
    break;
  }
  }
}

void expectValues(const Buffer &b, int64_t dtype,
                  const std::vector<double> &want, const std::string &what,
                  double tolerance = 0) {
  std::vector<double> got = readAs(b, dtype, static_cast<int64_t>(want.size()));
  bool ok = true;
  for (size_t i = 0; i < want.size() && ok; ++i)
    ok = std::fabs(got[i] - want[i]) <= tolerance * (1 + std::fabs(want[i]));
  expect(ok, what + ": got [" + join(got) + "], want [" + join(want) + "]");
}

std::vector<double> iota(int64_t n, double start = 1) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = start + static_cast<double>(i);
  return v;
}

//===----------------------------------------------------------------------===//
// One rank
//===----------------------------------------------------------------------===//

/// Every collective over groups of one rank: y = x, for a blocking call
/// and its *_start (x overwritten right after the start).
void oneRankCollectives() {
  const std::vector<int64_t> axes = {2, 0, 1}; // both axes: one rank
  const std::vector<int64_t> dims = {2, 3, 4};
  const int64_t n = numel(dims);
  struct Case {
    const char *name;
    Kernel kernel;
    std::vector<int64_t> attrs; // before the axes
    bool async;
  };
  const std::vector<Case> cases = {
      {"all_reduce sum", weft_k_all_reduce, {0}, false},
      {"all_reduce avg", weft_k_all_reduce, {3}, false},
      {"all_reduce max", weft_k_all_reduce, {1}, false},
      {"all_reduce min", weft_k_all_reduce, {2}, false},
      {"all_gather dim 0", weft_k_all_gather, {0}, false},
      {"all_gather dim 2", weft_k_all_gather, {2}, false},
      {"reduce_scatter dim 0", weft_k_reduce_scatter, {0, 0}, false},
      {"reduce_scatter avg dim 1", weft_k_reduce_scatter, {3, 1}, false},
      {"all_to_all 2->1", weft_k_all_to_all, {2, 1}, false},
      {"all_to_all 0->2", weft_k_all_to_all, {0, 2}, false},
      {"broadcast", weft_k_broadcast, {0}, false},
      {"all_slice dim 1", weft_k_all_slice, {1}, false},
      {"all_reduce_start avg", weft_k_all_reduce_start, {3}, true},
      {"all_gather_start dim 1", weft_k_all_gather_start, {1}, true},
      {"all_gather_start dim 0", weft_k_all_gather_start, {0}, true},
      {"reduce_scatter_start dim 2", weft_k_reduce_scatter_start, {0, 2}, true},
      {"all_to_all_start 1->2", weft_k_all_to_all_start, {1, 2}, true},
      {"broadcast_start", weft_k_broadcast_start, {0}, true},
  };
  for (int64_t dtype : {WEFT_F32, WEFT_F64, WEFT_BF16, WEFT_I64, WEFT_I32}) {
    const int64_t bytes = n * weftDTypeSize(dtype);
    Buffer x(bytes), y(bytes), y2(bytes);
    const std::vector<double> values = iota(n, -5);
    for (const Case &c : cases) {
      writeAs(x, dtype, values);
      writeAs(y, dtype, std::vector<double>(n, 99));
      std::vector<int64_t> attrs;
      const int64_t slot = 7;
      if (c.async)
        attrs.push_back(slot);
      attrs.insert(attrs.end(), c.attrs.begin(), c.attrs.end());
      attrs.insert(attrs.end(), axes.begin(), axes.end());
      const std::vector<int64_t> d =
          desc({{dtype, dims}, {dtype, dims}}, attrs);
      run(c.kernel, {x.get(), y.get()}, d);
      std::string name =
          std::string(c.name) + " (" + weftDTypeName(dtype) + ")";
      if (c.async) {
        x.scribble(0x7f); // the start copied what it needs
        commWait(slot, {dtype, dims}, y.get(), y2.get());
        expectValues(y2, dtype, values, name + ", the comm_wait copy");
      }
      expectValues(y, dtype, values, name);
      // In place.
      writeAs(y, dtype, values);
      if (c.kernel != weft_k_all_slice) {
        run(c.kernel, {y.get(), y.get()}, d);
        if (c.async)
          commWait(slot, {dtype, dims}, y.get());
        expectValues(y, dtype, values, name + " in place");
      }
    }
  }
  // Any dtype moves.
  for (int64_t dtype : {WEFT_F16, WEFT_I8, WEFT_U8, WEFT_BOOL}) {
    const std::vector<int64_t> small = {2, 3};
    Buffer x(6 * weftDTypeSize(dtype)), y(6 * weftDTypeSize(dtype));
    const std::vector<double> values =
        dtype == WEFT_BOOL ? std::vector<double>{1, 0, 0, 1, 1, 0}
                           : std::vector<double>{1, 2, 3, 4, 5, 6};
    // all_gather and all_slice along dim 1, broadcast from group index 0.
    const std::pair<Kernel, int64_t> moves[] = {
        {weft_k_all_gather, 1}, {weft_k_all_slice, 1}, {weft_k_broadcast, 0}};
    for (const auto &move : moves) {
      writeAs(x, dtype, values);
      writeAs(y, dtype, std::vector<double>(6, 0));
      run(move.first, {x.get(), y.get()},
          desc({{dtype, small}, {dtype, small}}, {move.second, 2, 0, 1}));
      expectValues(y, dtype, values,
                   std::string("moving ") + weftDTypeName(dtype));
    }
  }
  // mesh_offset: group index 0.
  Buffer offset(8);
  offset.upload(std::vector<int64_t>{-1});
  run(weft_k_mesh_offset, {offset.get()}, desc({{WEFT_I64, {}}}, {5, 2, 0, 1}));
  expectValues(offset, WEFT_I64, {0}, "mesh_offset");
  // comm_progress takes nothing and does nothing.
  run(weft_k_comm_progress, {}, desc({}, {}));
  expect(weft::comm::context().pendingSlots().empty(),
         "every slot was waited for: " + weft::comm::context().pendingSlots());
}

/// copyRows against BlockLayout's host packing, for several groups, element
/// sizes and misalignments (each access width).
void blockCopies() {
  for (int64_t g : {1, 2, 3}) {
    for (int64_t elem : {1, 2, 4, 8, 16}) {
      for (int64_t skew : {0, 1, 2, 4, 8}) {
        const std::vector<int64_t> dims = {3, 6, 5};
        weft::cpu::TensorArg whole;
        whole.dtype = WEFT_U8;
        whole.rank = 3;
        // A u8 tensor whose last dim spans elem bytes per element.
        const std::vector<int64_t> byteDims = {3, 6, 5 * elem};
        whole.dims = byteDims.data();
        whole.numel = numel(byteDims);
        const weft::comm::BlockLayout layout(whole, 1, g);
        const int64_t bytes = whole.numel;
        std::vector<uint8_t> host(static_cast<size_t>(bytes));
        for (int64_t i = 0; i < bytes; ++i)
          host[i] = static_cast<uint8_t>(i * 7 + 3);
        std::vector<uint8_t> packed(host.size()), unpacked(host.size());
        layout.pack(host.data(), packed.data());
        Buffer a(bytes + 16), b(bytes + 16), c(bytes + 16);
        auto *pa = static_cast<uint8_t *>(a.get()) + skew;
        auto *pb = static_cast<uint8_t *>(b.get()) + skew;
        auto *pc = static_cast<uint8_t *>(c.get()) + skew;
        const int64_t o = layout.outer, r = layout.row;
        cudaStream_t s = weft::cuda::computeStream();
        check(
            cudaMemcpyAsync(pa, host.data(), bytes, cudaMemcpyHostToDevice, s),
            "upload");
        // pack, unpack, and block 1 % g (all_slice).
        weft::nccl::copyRows(pb, pa, g, o, r, o * r, r, r, g * r, s);
        weft::nccl::copyRows(pc, pb, g, o, r, r, g * r, o * r, r, s);
        check(cudaStreamSynchronize(s), "copyRows");
        std::vector<uint8_t> gotPacked(host.size()), gotBack(host.size());
        check(cudaMemcpy(gotPacked.data(), pb, bytes, cudaMemcpyDeviceToHost),
              "download");
        check(cudaMemcpy(gotBack.data(), pc, bytes, cudaMemcpyDeviceToHost),
              "download");
        const std::string name = "block copies g=" + std::to_string(g) +
                                 " elem=" + std::to_string(elem) +
                                 " skew=" + std::to_string(skew);
        expect(gotPacked == packed, name + ": pack");
        expect(gotBack == host, name + ": unpack");
        const int64_t j = 1 % g;
        std::vector<uint8_t> block(static_cast<size_t>(o * r));
        layout.extract(host.data(), j, block.data());
        weft::nccl::copyRows(pb, pa + j * r, 1, o, r, 0, r, 0, g * r, s);
        check(cudaStreamSynchronize(s), "copyRows");
        std::vector<uint8_t> gotBlock(block.size());
        check(cudaMemcpy(gotBlock.data(), pb, block.size(),
                         cudaMemcpyDeviceToHost),
              "download");
        expect(gotBlock == block, name + ": extract");
      }
    }
  }
}

/// The division that finishes an average NCCL cannot take exactly.
void averages() {
  const std::vector<double> values = {7, -7, 8, -8, 1, 0, 100};
  for (int64_t dtype : {WEFT_F32, WEFT_F64, WEFT_BF16, WEFT_I64, WEFT_I32}) {
    Buffer b(values.size() * weftDTypeSize(dtype));
    writeAs(b, dtype, values);
    weft::nccl::divideBy(b.get(), static_cast<int64_t>(values.size()), dtype, 3,
                         weft::cuda::computeStream());
    std::vector<double> want;
    for (double v : values) {
      if (dtype == WEFT_I64 || dtype == WEFT_I32)
        want.push_back(static_cast<double>(static_cast<int64_t>(v) / 3));
      else if (dtype == WEFT_BF16)
        want.push_back(weft::bfloat16ToFloat(
            weft::floatToBFloat16(static_cast<float>(v) / 3.0f)));
      else if (dtype == WEFT_F32)
        want.push_back(static_cast<float>(v) / 3.0f);
      else
        want.push_back(v / 3.0);
    }
    expectValues(b, dtype, want,
                 std::string("divideBy 3 (") + weftDTypeName(dtype) + ")");
  }
}

int oneRank() {
  std::string error;
  if (!weft::comm::context().init(1, {1, 1}, {"dp", "pp"}, error)) {
    std::printf("FAIL: %s\n", error.c_str());
    return 1;
  }
  weft_rt_device_comm_start();
  const bool nccl = weft::nccl::DeviceComm::get().viaNccl(1);
  std::printf("one rank: groups of one rank %s\n",
              nccl ? "through a one-rank NCCL communicator (WEFT_NCCL_FORCE=1)"
                   : "as device copies");
  oneRankCollectives();
  blockCopies();
  averages();
  weft_rt_device_comm_finish();
  weft::cuda::checkDeviceErrors();
  return 0;
}

//===----------------------------------------------------------------------===//
// Two ranks
//===----------------------------------------------------------------------===//

const std::vector<int64_t> kAxis = {1, 0}; // mesh axis 0 ("pp"), two ranks

std::vector<int64_t> withAxis(std::vector<int64_t> attrs) {
  attrs.insert(attrs.end(), kAxis.begin(), kAxis.end());
  return attrs;
}

/// One collective x -> y on two ranks: x from xOf(rank), y against want.
void twoRankCase(const std::string &name, Kernel kernel, int64_t dtype,
                 const std::vector<int64_t> &xDims,
                 const std::vector<int64_t> &yDims,
                 const std::vector<int64_t> &attrs,
                 const std::function<double(int64_t r, int64_t i)> &xOf,
                 const std::function<double(int64_t i)> &want,
                 int64_t slot = -1, double tolerance = 0) {
  const int64_t nx = numel(xDims), ny = numel(yDims);
  Buffer x(nx * weftDTypeSize(dtype)), y(ny * weftDTypeSize(dtype));
  std::vector<double> xs(static_cast<size_t>(nx)), wants;
  for (int64_t i = 0; i < nx; ++i)
    xs[i] = xOf(gRank, i);
  for (int64_t i = 0; i < ny; ++i)
    wants.push_back(want(i));
  writeAs(x, dtype, xs);
  writeAs(y, dtype, std::vector<double>(ny, -77));
  std::vector<int64_t> all;
  if (slot >= 0)
    all.push_back(slot);
  all.insert(all.end(), attrs.begin(), attrs.end());
  run(kernel, {x.get(), y.get()},
      desc({{dtype, xDims}, {dtype, yDims}}, withAxis(all)));
  if (slot >= 0) {
    x.scribble(0x55);
    commWait(slot, {dtype, yDims}, y.get());
  }
  expectValues(y, dtype, wants, name + " (" + weftDTypeName(dtype) + ")",
               tolerance);
}

void twoRankCollectives() {
  const int64_t me = gRank;
  // all_reduce: sum, avg (integers truncate toward zero), max, min.
  for (int64_t slot : {-1, 11}) {
    Kernel ar = slot < 0 ? weft_k_all_reduce : weft_k_all_reduce_start;
    const std::string n = slot < 0 ? "all_reduce" : "all_reduce_start";
    for (int64_t dtype : {WEFT_F32, WEFT_F64, WEFT_BF16, WEFT_I64, WEFT_I32}) {
      twoRankCase(
          n + " sum", ar, dtype, {1000}, {1000}, {0},
          [](int64_t r, int64_t i) { return (r + 1) * (i % 50); },
          [](int64_t i) { return 3 * (i % 50); }, slot);
      twoRankCase(
          n + " max", ar, dtype, {7}, {7}, {1},
          [](int64_t r, int64_t i) { return r == 0 ? i : 6 - i; },
          [](int64_t i) { return i > 6 - i ? i : 6 - i; }, slot);
      twoRankCase(
          n + " min", ar, dtype, {7}, {7}, {2},
          [](int64_t r, int64_t i) { return r == 0 ? i : 6 - i; },
          [](int64_t i) { return i < 6 - i ? i : 6 - i; }, slot);
    }
    const std::vector<double> a = {3, -3, 5, 7, 0, -1}, b = {4, -4, 6, 8, 1, 0};
    for (int64_t dtype : {WEFT_I64, WEFT_I32})
      twoRankCase(
          n + " avg", ar, dtype, {6}, {6}, {3},
          [&](int64_t r, int64_t i) { return r == 0 ? a[i] : b[i]; },
          [&](int64_t i) {
            return static_cast<double>(static_cast<int64_t>(a[i] + b[i]) / 2);
          },
          slot);
    for (int64_t dtype : {WEFT_F32, WEFT_F64, WEFT_BF16})
      twoRankCase(
          n + " avg", ar, dtype, {6}, {6}, {3},
          [&](int64_t r, int64_t i) { return r == 0 ? a[i] : b[i]; },
          [&](int64_t i) { return (a[i] + b[i]) / 2; }, slot, 1e-6);
  }
  // all_gather along dim 1 (interleaved) and dim 0.
  for (int64_t slot : {-1, 12}) {
    Kernel ag = slot < 0 ? weft_k_all_gather : weft_k_all_gather_start;
    twoRankCase(
        "all_gather dim 1", ag, WEFT_F32, {2, 3}, {2, 6}, {1},
        [](int64_t r, int64_t i) { return 100 * r + i; },
        [](int64_t i) {
          const int64_t o = i / 6, b = i % 6 / 3, k = i % 3;
          return 100 * b + o * 3 + k;
        },
        slot);
    twoRankCase(
        "all_gather dim 0", ag, WEFT_I32, {2, 3}, {4, 3}, {0},
        [](int64_t r, int64_t i) { return 100 * r + i; },
        [](int64_t i) { return 100 * (i / 6) + i % 6; }, slot);
  }
  // reduce_scatter along dim 1 (packed first) and dim 0, sum and avg.
  for (int64_t slot : {-1, 13}) {
    Kernel rs = slot < 0 ? weft_k_reduce_scatter : weft_k_reduce_scatter_start;
    twoRankCase(
        "reduce_scatter dim 1", rs, WEFT_F32, {2, 4}, {2, 2}, {0, 1},
        [](int64_t r, int64_t i) { return (r + 1) * i; },
        [me](int64_t i) { return 3 * ((i / 2) * 4 + 2 * me + i % 2); }, slot);
    twoRankCase(
        "reduce_scatter avg dim 0", rs, WEFT_I64, {4, 2}, {2, 2}, {3, 0},
        [](int64_t r, int64_t i) { return (r + 1) * i; },
        [me](int64_t i) { return 3 * (4 * me + i) / 2; }, slot);
  }
  // all_to_all: blocks of dim 1 joined along dim 0, and the reverse.
  for (int64_t slot : {-1, 14}) {
    Kernel aa = slot < 0 ? weft_k_all_to_all : weft_k_all_to_all_start;
    twoRankCase(
        "all_to_all 1->0", aa, WEFT_I32, {2, 4}, {4, 2}, {1, 0},
        [](int64_t r, int64_t i) { return 100 * r + i; },
        [me](int64_t i) {
          const int64_t b = i / 4, o = i % 4 / 2, k = i % 2;
          return 100 * b + o * 4 + 2 * me + k;
        },
        slot);
    twoRankCase(
        "all_to_all 0->1", aa, WEFT_BF16, {4, 2}, {2, 4}, {0, 1},
        [](int64_t r, int64_t i) { return 10 * r + i; },
        [me](int64_t i) {
          const int64_t o = i / 4, b = i % 4 / 2, k = i % 2;
          return 10 * b + (2 * me + o) * 2 + k;
        },
        slot);
  }
  // broadcast from group index 1.
  for (int64_t slot : {-1, 15}) {
    Kernel bc = slot < 0 ? weft_k_broadcast : weft_k_broadcast_start;
    twoRankCase(
        "broadcast root 1", bc, WEFT_F64, {3, 5}, {3, 5}, {1},
        [](int64_t r, int64_t i) { return 1000 * r + i; },
        [](int64_t i) { return 1000 + i; }, slot);
  }
  // all_slice along dim 1: this rank's columns.
  twoRankCase(
      "all_slice dim 1", weft_k_all_slice, WEFT_F32, {2, 4}, {2, 2}, {1},
      [](int64_t, int64_t i) { return i; },
      [me](int64_t i) { return (i / 2) * 4 + 2 * me + i % 2; });
  // mesh_offset.
  Buffer offset(8);
  run(weft_k_mesh_offset, {offset.get()},
      desc({{WEFT_I64, {}}}, withAxis({4})));
  expectValues(offset, WEFT_I64, {static_cast<double>(4 * me)}, "mesh_offset");

  // Two collectives in flight at once, waited for in the other order.
  {
    const std::vector<int64_t> dims = {256};
    Buffer x1(1024), y1(1024), x2(1024), y2(1024);
    writeAs(x1, WEFT_F32, std::vector<double>(256, me + 1.0));
    writeAs(x2, WEFT_F32, std::vector<double>(256, 10.0 * (me + 1)));
    run(weft_k_all_reduce_start, {x1.get(), y1.get()},
        desc({{WEFT_F32, dims}, {WEFT_F32, dims}}, withAxis({21, 0})));
    run(weft_k_all_reduce_start, {x2.get(), y2.get()},
        desc({{WEFT_F32, dims}, {WEFT_F32, dims}}, withAxis({22, 1})));
    commWait(22, {WEFT_F32, dims}, y2.get());
    commWait(21, {WEFT_F32, dims}, y1.get());
    expectValues(y1, WEFT_F32, std::vector<double>(256, 3), "overlapped sum");
    expectValues(y2, WEFT_F32, std::vector<double>(256, 20), "overlapped max");
  }
}

/// Message m's contents (the same on both ranks).
std::vector<float> message(int64_t m, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(m * 1000 + i % 997);
  return v;
}

/// Pipeline transfers: blocking send/recv, then three microbatches of
/// 1F1B between two stages, issued in the order weft-pipeline emits them
/// (receives posted a unit early, each wait right before the reader). The
/// messages are large, so a send cannot complete before its receive runs:
/// on one stream per rank this order deadlocks.
void twoRankTransfers() {
  const int64_t me = gRank, peer = 1 - me;
  {
    const std::vector<int64_t> dims = {5};
    Buffer b(20);
    if (me == 0) {
      b.upload(message(1, 5));
      run(weft_k_send, {b.get()},
          desc({{WEFT_F32, dims}}, withAxis({peer, 1})));
      run(weft_k_recv, {b.get()},
          desc({{WEFT_F32, dims}}, withAxis({peer, 2})));
      expect(b.download<float>(5) == message(2, 5), "recv from rank 1");
    } else {
      run(weft_k_recv, {b.get()},
          desc({{WEFT_F32, dims}}, withAxis({peer, 1})));
      expect(b.download<float>(5) == message(1, 5), "recv from rank 0");
      b.upload(message(2, 5));
      run(weft_k_send, {b.get()},
          desc({{WEFT_F32, dims}}, withAxis({peer, 2})));
    }
  }
  const int64_t n = 4 << 20; // 16 MiB messages
  const std::vector<int64_t> dims = {n};
  const Shape shape = {WEFT_F32, dims};
  std::vector<std::unique_ptr<Buffer>> a, g;
  for (int m = 0; m < 3; ++m) {
    a.push_back(std::make_unique<Buffer>(n * 4));
    g.push_back(std::make_unique<Buffer>(n * 4));
  }
  auto sendStart = [&](Buffer &b, int64_t slot, int64_t tag) {
    run(weft_k_send_start, {b.get()},
        desc({shape}, withAxis({slot, peer, tag})));
  };
  auto recvStart = [&](Buffer &b, int64_t slot, int64_t tag) {
    run(weft_k_recv_start, {b.get()},
        desc({shape}, withAxis({slot, peer, tag})));
  };
  if (me == 0) { // stage 0: F0 F1 B0 F2 B1 B2
    for (int m = 0; m < 3; ++m)
      a[m]->upload(message(m + 1, n));
    sendStart(*a[0], 100, 10);
    recvStart(*g[0], 200, 20);
    sendStart(*a[1], 101, 11);
    commWait(200, shape, g[0]->get());
    recvStart(*g[1], 201, 21);
    sendStart(*a[2], 102, 12);
    recvStart(*g[2], 202, 22);
    commWait(201, shape, g[1]->get());
    commWait(202, shape, g[2]->get());
    for (int m = 0; m < 3; ++m)
      commWait(100 + m, shape, a[m]->get());
    for (int m = 0; m < 3; ++m)
      expect(g[m]->download<float>(n) == message(m + 1, n),
             "1F1B: gradient " + std::to_string(m) + " came back");
  } else {                       // stage 1: F0 B0 F1 B1 F2 B2
    auto backward = [&](int m) { // the "gradient": the activation's copy
      check(cudaMemcpyAsync(g[m]->get(), a[m]->get(), n * 4,
                            cudaMemcpyDeviceToDevice,
                            weft::cuda::computeStream()),
            "copy");
      sendStart(*g[m], 400 + m, 20 + m);
    };
    recvStart(*a[0], 300, 10);
    commWait(300, shape, a[0]->get());
    recvStart(*a[1], 301, 11);
    backward(0);
    commWait(301, shape, a[1]->get());
    recvStart(*a[2], 302, 12);
    backward(1);
    commWait(302, shape, a[2]->get());
    backward(2);
    for (int m = 0; m < 3; ++m)
      commWait(400 + m, shape, g[m]->get());
    for (int m = 0; m < 3; ++m)
      expect(a[m]->download<float>(n) == message(m + 1, n),
             "1F1B: activation " + std::to_string(m) + " arrived");
  }
  expect(weft::comm::context().pendingSlots().empty(),
         "every slot was waited for: " + weft::comm::context().pendingSlots());
}

/// Rank 0 sends tags 1 then 2; rank 1 receives tag 2 first.
int orderMismatch() {
  const std::vector<int64_t> dims = {1024};
  Buffer x1(4096), x2(4096);
  x1.upload(message(1, 1024));
  x2.upload(message(2, 1024));
  const int64_t peer = 1 - gRank;
  auto d = [&](int64_t slot, int64_t tag) {
    return desc({{WEFT_F32, dims}}, withAxis({slot, peer, tag}));
  };
  if (gRank == 0) {
    run(weft_k_send_start, {x1.get()}, d(1, 1));
    run(weft_k_send_start, {x2.get()}, d(2, 2));
  } else {
    run(weft_k_recv_start, {x2.get()}, d(1, 2));
    run(weft_k_recv_start, {x1.get()}, d(2, 1));
  }
  commWait(1, {WEFT_F32, dims}, gRank == 0 ? x1.get() : x2.get());
  commWait(2, {WEFT_F32, dims}, gRank == 0 ? x2.get() : x1.get());
  weft::cuda::synchronize();
  if (gRank == 1) {
    // The watchdog stops the process within a fraction of a second.
    std::this_thread::sleep_for(std::chrono::seconds(5));
    weft::cuda::checkDeviceErrors();
    std::printf("rank 1: no error reported for transfers out of order\n");
    return 0;
  }
  weft_rt_device_comm_finish();
  return 0;
}

/// Rank 1 dies; rank 0's all_reduce must end with a clear error.
int deadPeer() {
  if (gRank == 1) {
    std::printf("rank 1: exiting on purpose\n");
    std::fflush(stdout);
    std::_Exit(3);
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const std::vector<int64_t> dims = {1 << 20};
  Buffer x(4 << 20);
  run(weft_k_all_reduce, {x.get(), x.get()},
      desc({{WEFT_F32, dims}, {WEFT_F32, dims}}, withAxis({0})));
  weft::cuda::synchronize();
  std::printf("rank 0: the all_reduce finished without its peer\n");
  return 0;
}

int twoRanks(const std::string &mode) {
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "counting GPUs");
  if (devices < 2) {
    int version = 0;
    (void)ncclGetVersion(&version);
    const char *multi = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
    const bool enabled = multi && std::strcmp(multi, "1") == 0;
    if (version < 23000 || !enabled) {
      std::printf("SKIP: two ranks on one GPU need NCCL 2.30 or newer with "
                  "NCCL_MULTI_RANK_GPU_ENABLE=1 (this is NCCL %d.%d.%d, "
                  "NCCL_MULTI_RANK_GPU_ENABLE %s)\n",
                  version / 10000, version / 100 % 100, version % 100,
                  enabled ? "=1" : "unset");
      return 77;
    }
  }
  std::string error;
  if (!weft::comm::context().init(2, {2}, {"pp"}, error)) {
    std::printf("FAIL: %s\n", error.c_str());
    return 1;
  }
  gRank = weft::comm::rank();
  weft_rt_device_comm_start();
  if (mode == "order-mismatch")
    return orderMismatch();
  if (mode == "dead-peer")
    return deadPeer();
  twoRankCollectives();
  twoRankTransfers();
  weft_rt_device_comm_finish();
  weft::cuda::checkDeviceErrors();
  const int64_t worst = weft::comm::maxOverRanks(gFailed);
  weft::comm::finalize();
  return worst == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("SKIP: no usable GPU (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "no device");
    return 77;
  }
  const std::string mode = argc > 1 ? argv[1] : "";
  int rc = 0;
  if (mode.empty()) {
    rc = oneRank();
  } else if (mode == "two-ranks" || mode == "order-mismatch" ||
             mode == "dead-peer") {
    rc = twoRanks(mode);
    if (rc == 77)
      return 77;
  } else {
    std::printf("usage: NcclCommTest [two-ranks|order-mismatch|dead-peer]\n");
    return 2;
  }
  std::printf("rank %lld: %d passed, %d failed\n",
              static_cast<long long>(gRank), gPassed, gFailed);
  return rc != 0 || gFailed != 0 ? 1 : rc;
}
