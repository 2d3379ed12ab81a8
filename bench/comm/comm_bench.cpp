//===- comm_bench.cpp - weft's collective kernels against plain MPI -------===//
//
// Run under mpirun (bench/run_comm_bench.py does): for each size and op,
// times weft's kernel (weft_k_all_reduce / all_gather / reduce_scatter over
// a 1-D mesh of every rank), the plain blocking MPI call and MPI's
// non-blocking form polled with MPI_Test (what weft's kernels use, for the
// watchdog) on the same buffers, alternating, and prints one JSON line per (op,
// size) from rank 0 with the median times and the bus bandwidths as nccl-tests
// defines them: algbw = bytes / time (bytes: the full, gathered size), busbw =
// algbw * 2(n-1)/n for all_reduce and algbw * (n-1)/n for the other two.
//
//===----------------------------------------------------------------------===//
#include "weft/runtime/Comm.h"
#include "weft/runtime/KernelABI.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

extern "C" void weft_k_all_reduce(void *const *, const int64_t *);
extern "C" void weft_k_all_gather(void *const *, const int64_t *);
extern "C" void weft_k_reduce_scatter(void *const *, const int64_t *);

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// desc of a 1-D f32 x -> y call with `attrs`.
std::vector<int64_t> desc(int64_t nx, int64_t ny, std::vector<int64_t> attrs) {
  std::vector<int64_t> d = {
      2, WEFT_F32, 1, nx, WEFT_F32, 1, ny, static_cast<int64_t>(attrs.size())};
  d.insert(d.end(), attrs.begin(), attrs.end());
  return d;
}

} // namespace

int main() {
  int provided;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int size, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string error;
  if (!weft::comm::init(size, {size}, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const int64_t axis = 0;
  for (int64_t bytes = 4096; bytes <= (int64_t(64) << 20); bytes *= 4) {
    int64_t n = bytes / 4; // full size in floats
    n -= n % size;
    const int64_t part = n / size;
    int iters = bytes <= (1 << 20) ? 50 : 10;
    std::vector<float> full(n, 1.0f), full2(n), shard(part, 1.0f), shard2(part);
    for (const char *op : {"all_reduce", "all_gather", "reduce_scatter"}) {
      std::string name = op;
      std::vector<double> tw, tm, tn;
      for (int it = 0; it < iters + 3; ++it) {
        for (int which = 0; which < 3; ++which) {
          MPI_Barrier(MPI_COMM_WORLD);
          double t0 = now();
          MPI_Request request;
          if (which == 2) {
            // Plain MPI's non-blocking form, which weft uses (for its
            // watchdog), waited for by polling as weft does.
            if (name == "all_reduce")
              MPI_Iallreduce(full.data(), full2.data(), static_cast<int>(n),
                             MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
            else if (name == "all_gather")
              MPI_Iallgather(shard.data(), static_cast<int>(part), MPI_FLOAT,
                             full2.data(), static_cast<int>(part), MPI_FLOAT,
                             MPI_COMM_WORLD, &request);
            else
              MPI_Ireduce_scatter_block(full.data(), shard2.data(),
                                        static_cast<int>(part), MPI_FLOAT,
                                        MPI_SUM, MPI_COMM_WORLD, &request);
            int done = 0;
            while (!done)
              MPI_Test(&request, &done, MPI_STATUS_IGNORE);
          } else if (name == "all_reduce") {
            if (which == 0) {
              void *bufs[] = {full.data(), full2.data()};
              auto d = desc(n, n, {0, 1, axis});
              weft_k_all_reduce(bufs, d.data());
            } else {
              MPI_Allreduce(full.data(), full2.data(), static_cast<int>(n),
                            MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            }
          } else if (name == "all_gather") {
            if (which == 0) {
              void *bufs[] = {shard.data(), full2.data()};
              auto d = desc(part, n, {0, 1, axis});
              weft_k_all_gather(bufs, d.data());
            } else {
              MPI_Allgather(shard.data(), static_cast<int>(part), MPI_FLOAT,
                            full2.data(), static_cast<int>(part), MPI_FLOAT,
                            MPI_COMM_WORLD);
            }
          } else {
            if (which == 0) {
              void *bufs[] = {full.data(), shard2.data()};
              auto d = desc(n, part, {0, 0, 1, axis});
              weft_k_reduce_scatter(bufs, d.data());
            } else {
              MPI_Reduce_scatter_block(full.data(), shard2.data(),
                                       static_cast<int>(part), MPI_FLOAT,
                                       MPI_SUM, MPI_COMM_WORLD);
            }
          }
          double t = now() - t0;
          double slowest;
          MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          if (it >= 3)
            (which == 0 ? tw : which == 1 ? tm : tn).push_back(slowest);
        }
      }
      if (rank == 0) {
        double factor = name == "all_reduce" ? 2.0 * (size - 1) / size
                                             : double(size - 1) / size;
        double w = median(tw), m = median(tm), nb = median(tn);
        double full_bytes = double(n) * 4;
        std::printf(
            "{\"op\":\"%s\",\"ranks\":%d,\"bytes\":%.0f,"
            "\"weft_s\":%.9f,\"mpi_s\":%.9f,\"mpi_nonblocking_s\":"
            "%.9f,\"weft_busbw_gbps\":%.4f,\"mpi_busbw_gbps\":%.4f,"
            "\"mpi_nonblocking_busbw_gbps\":%.4f}\n",
            op, size, full_bytes, w, m, nb, full_bytes / w * factor / 1e9,
            full_bytes / m * factor / 1e9, full_bytes / nb * factor / 1e9);
        std::fflush(stdout);
      }
    }
  }
  weft::comm::finalize();
  return 0;
}
