//===- NcclTwoRankTest.cpp - The NCCL collectives on two ranks ------------===//
//
// NcclCommTest's two-rank modes (see NcclCommTest.cpp), as nccl-two-ranks.sh
// starts them: every collective against its expected result, pipeline
// transfers crossing as in 1F1B, transfers issued out of order, and a dead
// peer.
//
//===----------------------------------------------------------------------===//
#include "NcclCommCommon.h"

namespace weft::test::nccl {

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
      kernelDesc({{dtype, xDims}, {dtype, yDims}}, withAxis(all)));
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
      kernelDesc({{WEFT_I64, {}}}, withAxis({4})));
  expectValues(offset, WEFT_I64, {static_cast<double>(4 * me)}, "mesh_offset");

  // Two collectives in flight at once, waited for in the other order.
  {
    const std::vector<int64_t> dims = {256};
    Buffer x1(1024), y1(1024), x2(1024), y2(1024);
    writeAs(x1, WEFT_F32, std::vector<double>(256, me + 1.0));
    writeAs(x2, WEFT_F32, std::vector<double>(256, 10.0 * (me + 1)));
    run(weft_k_all_reduce_start, {x1.get(), y1.get()},
        kernelDesc({{WEFT_F32, dims}, {WEFT_F32, dims}}, withAxis({21, 0})));
    run(weft_k_all_reduce_start, {x2.get(), y2.get()},
        kernelDesc({{WEFT_F32, dims}, {WEFT_F32, dims}}, withAxis({22, 1})));
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
          kernelDesc({{WEFT_F32, dims}}, withAxis({peer, 1})));
      run(weft_k_recv, {b.get()},
          kernelDesc({{WEFT_F32, dims}}, withAxis({peer, 2})));
      expect(b.download<float>(5) == message(2, 5), "recv from rank 1");
    } else {
      run(weft_k_recv, {b.get()},
          kernelDesc({{WEFT_F32, dims}}, withAxis({peer, 1})));
      expect(b.download<float>(5) == message(1, 5), "recv from rank 0");
      b.upload(message(2, 5));
      run(weft_k_send, {b.get()},
          kernelDesc({{WEFT_F32, dims}}, withAxis({peer, 2})));
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
        kernelDesc({shape}, withAxis({slot, peer, tag})));
  };
  auto recvStart = [&](Buffer &b, int64_t slot, int64_t tag) {
    run(weft_k_recv_start, {b.get()},
        kernelDesc({shape}, withAxis({slot, peer, tag})));
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
    return kernelDesc({{WEFT_F32, dims}}, withAxis({slot, peer, tag}));
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
      kernelDesc({{WEFT_F32, dims}, {WEFT_F32, dims}}, withAxis({0})));
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

} // namespace weft::test::nccl
