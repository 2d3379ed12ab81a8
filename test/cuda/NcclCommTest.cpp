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
#include "GpuSkip.h"
#include "NcclCommCommon.h"

namespace weft::test::nccl {

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
          kernelDesc({{dtype, dims}, {dtype, dims}}, attrs);
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
          kernelDesc({{dtype, small}, {dtype, small}}, {move.second, 2, 0, 1}));
      expectValues(y, dtype, values,
                   std::string("moving ") + weftDTypeName(dtype));
    }
  }
  // mesh_offset: group index 0.
  Buffer offset(8);
  offset.upload(std::vector<int64_t>{-1});
  run(weft_k_mesh_offset, {offset.get()},
      kernelDesc({{WEFT_I64, {}}}, {5, 2, 0, 1}));
  expectValues(offset, WEFT_I64, {0}, "mesh_offset");
  // comm_progress takes nothing and does nothing.
  run(weft_k_comm_progress, {}, kernelDesc({}, {}));
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

} // namespace weft::test::nccl

using namespace weft::test::nccl;

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  weft::test::skipWithoutGpu();
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
