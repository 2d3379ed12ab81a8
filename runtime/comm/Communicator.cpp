//===- Communicator.cpp - What every communicator backend shares ----------===//
//
// The public operations check their arguments, handle groups of one rank
// (copies), reduce bf16 in f32 (widened into scratch the request owns,
// rounded once at the end) and turn avg into a sum scaled at the end; the
// backend only moves and reduces f32/f64/i64/i32.
//
//===----------------------------------------------------------------------===//
#include "CommInternal.h"

#include "weft/runtime/Diagnostics.h"
#include "weft/runtime/Float16.h"

#include <algorithm>
#include <cstring>

namespace weft {
namespace comm {

const char *reductionName(Reduction op) {
  switch (op) {
  case Reduction::Sum:
    return "sum";
  case Reduction::Max:
    return "max";
  case Reduction::Min:
    return "min";
  case Reduction::Avg:
    return "avg";
  }
  return "?";
}

bool isReduction(int64_t code) { return code >= 0 && code <= 3; }

//===----------------------------------------------------------------------===//
// Request
//===----------------------------------------------------------------------===//

Request::Transfer::~Transfer() = default;

Request::Request(Request &&other) noexcept
    : comm_(other.comm_), op_(other.op_), transfer_(std::move(other.transfer_)),
      steps_(std::move(other.steps_)) {
  other.comm_ = nullptr;
}

Request &Request::operator=(Request &&other) noexcept {
  if (this != &other) {
    wait();
    comm_ = other.comm_;
    op_ = other.op_;
    transfer_ = std::move(other.transfer_);
    steps_ = std::move(other.steps_);
    other.comm_ = nullptr;
  }
  return *this;
}

Request::~Request() { wait(); }

void Request::wait() {
  if (comm_)
    comm_->wait(*this);
}

void Request::poll() {
  if (transfer_)
    transfer_->test();
}

void Request::then(std::function<void()> step) {
  if (!comm_) {
    step();
    return;
  }
  steps_.push_back(std::move(step));
}

//===----------------------------------------------------------------------===//
// Communicator
//===----------------------------------------------------------------------===//

namespace {

bool reducible(int64_t dtype) {
  return dtype == WEFT_F32 || dtype == WEFT_F64 || dtype == WEFT_BF16 ||
         dtype == WEFT_I64 || dtype == WEFT_I32;
}

/// Divides `count` elements of `dtype` at `data` by `n` (avg).
void divide(void *data, int64_t count, int64_t dtype, int64_t n) {
  switch (dtype) {
  case WEFT_F32: {
    float *p = static_cast<float *>(data);
    for (int64_t i = 0; i < count; ++i)
      p[i] /= static_cast<float>(n);
    break;
  }
  case WEFT_F64: {
    double *p = static_cast<double *>(data);
    for (int64_t i = 0; i < count; ++i)
      p[i] /= static_cast<double>(n);
    break;
  }
  case WEFT_I64: {
    int64_t *p = static_cast<int64_t *>(data);
    for (int64_t i = 0; i < count; ++i)
      p[i] /= n;
    break;
  }
  case WEFT_I32: {
    int32_t *p = static_cast<int32_t *>(data);
    for (int64_t i = 0; i < count; ++i)
      p[i] /= static_cast<int32_t>(n);
    break;
  }
  default:
    break;
  }
}

/// bf16 scratch widened to f32.
std::shared_ptr<std::vector<float>> widen(const void *bf16, int64_t count) {
  auto wide = std::make_shared<std::vector<float>>(static_cast<size_t>(count));
  const uint16_t *p = static_cast<const uint16_t *>(bf16);
  for (int64_t i = 0; i < count; ++i)
    (*wide)[i] = bfloat16ToFloat(p[i]);
  return wide;
}

/// Rounds f32 `from` (divided by `divisor`) into bf16 `out`.
void narrow(const float *from, void *out, int64_t count, int64_t divisor) {
  uint16_t *p = static_cast<uint16_t *>(out);
  for (int64_t i = 0; i < count; ++i)
    p[i] = floatToBFloat16(
        divisor == 1 ? from[i] : from[i] / static_cast<float>(divisor));
}

} // namespace

Communicator::Communicator(int64_t rank, int64_t size,
                           std::vector<int64_t> worldRanks, std::string name)
    : rank_(rank), size_(size), worldRanks_(std::move(worldRanks)),
      name_(std::move(name)) {}

Communicator::~Communicator() = default;

void Communicator::abortJob(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

void Communicator::misuse(const char *op, const std::string &what) {
  fatal(kExitFailure, "%s over %s: %s", op, name_.c_str(), what.c_str());
}

Request Communicator::makeRequest(const char *op, TransferPtr transfer) {
  Request request;
  request.comm_ = this;
  request.op_ = op;
  request.transfer_ = std::move(transfer);
  return request;
}

void Communicator::wait(Request &request) {
  if (!request.comm_)
    return;
  if (request.comm_ != this)
    return request.comm_->wait(request);
  if (request.transfer_) {
    if (!request.transfer_->test())
      watchTransfer(*request.transfer_, request.op_, *this);
    request.transfer_.reset();
  }
  std::vector<std::function<void()>> steps = std::move(request.steps_);
  request.steps_.clear();
  request.comm_ = nullptr;
  for (std::function<void()> &step : steps)
    step();
}

Request Communicator::allReduceStart(const void *in, void *out, int64_t count,
                                     int64_t dtype, Reduction op) {
  const char *name = "all_reduce";
  if (!reducible(dtype))
    misuse(name, std::string("cannot reduce dtype ") + weftDTypeName(dtype) +
                     " (f32, f64, bf16, i64 and i32 can be)");
  if (count < 0)
    misuse(name, "negative element count");
  const int64_t elem = weftDTypeSize(dtype);
  if (size_ == 1) {
    if (in != out && count > 0)
      std::memmove(out, in, static_cast<size_t>(count * elem));
    return makeRequest(name, nullptr);
  }
  const Reduction base = op == Reduction::Avg ? Reduction::Sum : op;
  const int64_t divisor = op == Reduction::Avg ? size_ : 1;
  if (dtype == WEFT_BF16) {
    std::shared_ptr<std::vector<float>> wide = widen(in, count);
    Request request =
        makeRequest(name, startAllReduce(wide->data(), wide->data(), count,
                                         WEFT_F32, base));
    request.then([wide, out, count, divisor] {
      narrow(wide->data(), out, count, divisor);
    });
    return request;
  }
  Request request =
      makeRequest(name, startAllReduce(in, out, count, dtype, base));
  if (divisor != 1)
    request.then(
        [out, count, dtype, divisor] { divide(out, count, dtype, divisor); });
  return request;
}

Request Communicator::allGatherStart(const void *in, void *out, int64_t count,
                                     int64_t dtype) {
  const char *name = "all_gather";
  const int64_t elem = weftDTypeSize(dtype);
  if (elem == 0 || count < 0)
    misuse(name, "unknown dtype or negative element count");
  const size_t block = static_cast<size_t>(count * elem);
  uint8_t *own = static_cast<uint8_t *>(out) + block * rank_;
  if (size_ == 1) {
    if (in != out && block)
      std::memmove(out, in, block);
    return makeRequest(name, nullptr);
  }
  return makeRequest(
      name, startAllGather(in == own ? nullptr : in, out, count, elem));
}

Request Communicator::reduceScatterStart(const void *in, void *out,
                                         int64_t count, int64_t dtype,
                                         Reduction op) {
  const char *name = "reduce_scatter";
  if (!reducible(dtype))
    misuse(name, std::string("cannot reduce dtype ") + weftDTypeName(dtype) +
                     " (f32, f64, bf16, i64 and i32 can be)");
  if (count < 0)
    misuse(name, "negative element count");
  if (in == out && size_ > 1)
    misuse(name, "the input and the output must be different buffers");
  const int64_t elem = weftDTypeSize(dtype);
  if (size_ == 1) {
    if (in != out && count > 0)
      std::memmove(out, in, static_cast<size_t>(count * elem));
    return makeRequest(name, nullptr);
  }
  const Reduction base = op == Reduction::Avg ? Reduction::Sum : op;
  const int64_t divisor = op == Reduction::Avg ? size_ : 1;
  if (dtype == WEFT_BF16) {
    std::shared_ptr<std::vector<float>> wide = widen(in, count * size_);
    auto reduced =
        std::make_shared<std::vector<float>>(static_cast<size_t>(count));
    Request request =
        makeRequest(name, startReduceScatter(wide->data(), reduced->data(),
                                             count, WEFT_F32, base));
    request.then([wide, reduced, out, count, divisor] {
      narrow(reduced->data(), out, count, divisor);
    });
    return request;
  }
  Request request =
      makeRequest(name, startReduceScatter(in, out, count, dtype, base));
  if (divisor != 1)
    request.then(
        [out, count, dtype, divisor] { divide(out, count, dtype, divisor); });
  return request;
}

bool Communicator::startReduceScatterPieces(const std::vector<const void *> &,
                                            const std::vector<int64_t> &,
                                            void *, int64_t, Reduction,
                                            TransferPtr &) {
  return false;
}

bool Communicator::startAllGatherPieces(const std::vector<void *> &,
                                        const std::vector<int64_t> &, int64_t,
                                        TransferPtr &) {
  return false;
}

int64_t Communicator::piecesTotal(const char *op, size_t pieces,
                                  const std::vector<int64_t> &counts) {
  if (counts.size() != pieces)
    misuse(op, std::to_string(pieces) + " pieces but " +
                   std::to_string(counts.size()) + " counts");
  int64_t total = 0;
  for (int64_t c : counts) {
    if (c < 0)
      misuse(op, "negative element count");
    total += c;
  }
  return total;
}

Request
Communicator::reduceScatterPiecesStart(const std::vector<const void *> &pieces,
                                       const std::vector<int64_t> &counts,
                                       void *out, int64_t dtype, Reduction op) {
  const char *name = "reduce_scatter";
  if (!reducible(dtype))
    misuse(name, std::string("cannot reduce dtype ") + weftDTypeName(dtype) +
                     " (f32, f64, bf16, i64 and i32 can be)");
  const int64_t total = piecesTotal(name, pieces.size(), counts);
  const size_t elem = static_cast<size_t>(weftDTypeSize(dtype));
  if (size_ == 1) {
    uint8_t *to = static_cast<uint8_t *>(out);
    for (size_t i = 0; i < pieces.size(); to += counts[i] * elem, ++i)
      if (pieces[i] != to && counts[i] > 0)
        std::memmove(to, pieces[i], counts[i] * elem);
    return makeRequest(name, nullptr);
  }
  if (dtype != WEFT_BF16) {
    TransferPtr transfer;
    const Reduction base = op == Reduction::Avg ? Reduction::Sum : op;
    if (startReduceScatterPieces(pieces, counts, out, dtype, base, transfer)) {
      Request request = makeRequest(name, std::move(transfer));
      if (op == Reduction::Avg)
        request.then(
            [out, total, dtype, n = size_] { divide(out, total, dtype, n); });
      return request;
    }
  }
  // Packed block-major into scratch the request keeps.
  auto packed = std::make_shared<Scratch>(
      std::max<size_t>(1, static_cast<size_t>(total * size_) * elem));
  uint8_t *to = packed->data();
  for (int64_t j = 0; j < size_; ++j)
    for (size_t i = 0; i < pieces.size(); to += counts[i] * elem, ++i)
      std::memcpy(
          to, static_cast<const uint8_t *>(pieces[i]) + j * counts[i] * elem,
          counts[i] * elem);
  Request request = reduceScatterStart(packed->data(), out, total, dtype, op);
  request.then([packed] {});
  return request;
}

Request Communicator::allGatherPiecesStart(const void *in,
                                           const std::vector<void *> &pieces,
                                           const std::vector<int64_t> &counts,
                                           int64_t dtype) {
  const char *name = "all_gather";
  const size_t elem = static_cast<size_t>(weftDTypeSize(dtype));
  if (elem == 0)
    misuse(name, "unknown dtype");
  const int64_t total = piecesTotal(name, pieces.size(), counts);
  // This rank's blocks, from `in`.
  const uint8_t *from = static_cast<const uint8_t *>(in);
  for (size_t i = 0; i < pieces.size(); from += counts[i] * elem, ++i)
    std::memmove(static_cast<uint8_t *>(pieces[i]) + rank_ * counts[i] * elem,
                 from, counts[i] * elem);
  if (size_ == 1)
    return makeRequest(name, nullptr);
  TransferPtr transfer;
  if (startAllGatherPieces(pieces, counts, static_cast<int64_t>(elem),
                           transfer))
    return makeRequest(name, std::move(transfer));
  // Gathered block-major into scratch, then dealt out to the pieces.
  const size_t block = static_cast<size_t>(total) * elem;
  auto packed = std::make_shared<Scratch>(
      std::max<size_t>(1, block * static_cast<size_t>(size_)));
  uint8_t *own = packed->data() + block * static_cast<size_t>(rank_);
  std::memcpy(own, in, block);
  Request request = allGatherStart(own, packed->data(), total, dtype);
  // (This rank's blocks are in place already.)
  request.then([packed, pieces, counts, elem, n = size_, me = rank_] {
    const uint8_t *from = packed->data();
    for (int64_t j = 0; j < n; ++j)
      for (size_t i = 0; i < pieces.size(); from += counts[i] * elem, ++i)
        if (j != me)
          std::memcpy(static_cast<uint8_t *>(pieces[i]) + j * counts[i] * elem,
                      from, counts[i] * elem);
  });
  return request;
}

Request Communicator::allToAllStart(const void *in, void *out, int64_t count,
                                    int64_t dtype) {
  const char *name = "all_to_all";
  const int64_t elem = weftDTypeSize(dtype);
  if (elem == 0 || count < 0)
    misuse(name, "unknown dtype or negative element count");
  if (in == out && size_ > 1)
    misuse(name, "the input and the output must be different buffers");
  if (size_ == 1) {
    if (in != out && count > 0)
      std::memmove(out, in, static_cast<size_t>(count * elem));
    return makeRequest(name, nullptr);
  }
  return makeRequest(name, startAllToAll(in, out, count, elem));
}

Request Communicator::broadcastStart(void *data, int64_t count, int64_t dtype,
                                     int64_t root) {
  const char *name = "broadcast";
  const int64_t elem = weftDTypeSize(dtype);
  if (elem == 0 || count < 0)
    misuse(name, "unknown dtype or negative element count");
  if (root < 0 || root >= size_)
    misuse(name, "root " + std::to_string(root) + " is not a group index (0.." +
                     std::to_string(size_ - 1) + ")");
  if (size_ == 1)
    return makeRequest(name, nullptr);
  return makeRequest(name, startBroadcast(data, count, elem, root));
}

Request Communicator::sendStart(const void *data, int64_t count, int64_t dtype,
                                int64_t peer, int64_t tag) {
  const char *name = "send";
  const int64_t elem = weftDTypeSize(dtype);
  if (elem == 0 || count < 0)
    misuse(name, "unknown dtype or negative element count");
  if (peer < 0 || peer >= size_ || peer == rank_)
    misuse(name, "peer " + std::to_string(peer) +
                     " is not another group index (this rank is " +
                     std::to_string(rank_) + " of " + std::to_string(size_) +
                     ")");
  if (tag < 0 || tag > 32767)
    misuse(name, "tag " + std::to_string(tag) + " is outside 0..32767");
  return makeRequest(name, startSend(data, count, elem, peer, tag));
}

Request Communicator::recvStart(void *data, int64_t count, int64_t dtype,
                                int64_t peer, int64_t tag) {
  const char *name = "recv";
  const int64_t elem = weftDTypeSize(dtype);
  if (elem == 0 || count < 0)
    misuse(name, "unknown dtype or negative element count");
  if (peer < 0 || peer >= size_ || peer == rank_)
    misuse(name, "peer " + std::to_string(peer) +
                     " is not another group index (this rank is " +
                     std::to_string(rank_) + " of " + std::to_string(size_) +
                     ")");
  if (tag < 0 || tag > 32767)
    misuse(name, "tag " + std::to_string(tag) + " is outside 0..32767");
  return makeRequest(name, startRecv(data, count, elem, peer, tag));
}

Request Communicator::barrierStart() {
  if (size_ == 1)
    return makeRequest("barrier", nullptr);
  return makeRequest("barrier", startBarrier());
}

void Communicator::allReduce(const void *in, void *out, int64_t count,
                             int64_t dtype, Reduction op) {
  Request request = allReduceStart(in, out, count, dtype, op);
  wait(request);
}

void Communicator::allGather(const void *in, void *out, int64_t count,
                             int64_t dtype) {
  Request request = allGatherStart(in, out, count, dtype);
  wait(request);
}

void Communicator::reduceScatter(const void *in, void *out, int64_t count,
                                 int64_t dtype, Reduction op) {
  Request request = reduceScatterStart(in, out, count, dtype, op);
  wait(request);
}

void Communicator::allToAll(const void *in, void *out, int64_t count,
                            int64_t dtype) {
  Request request = allToAllStart(in, out, count, dtype);
  wait(request);
}

void Communicator::broadcast(void *data, int64_t count, int64_t dtype,
                             int64_t root) {
  Request request = broadcastStart(data, count, dtype, root);
  wait(request);
}

void Communicator::send(const void *data, int64_t count, int64_t dtype,
                        int64_t peer, int64_t tag) {
  Request request = sendStart(data, count, dtype, peer, tag);
  wait(request);
}

void Communicator::recv(void *data, int64_t count, int64_t dtype, int64_t peer,
                        int64_t tag) {
  Request request = recvStart(data, count, dtype, peer, tag);
  wait(request);
}

void Communicator::barrier() {
  Request request = barrierStart();
  wait(request);
}

std::unique_ptr<Communicator>
Communicator::split(int64_t color, int64_t key, std::vector<int64_t> worldRanks,
                    std::string name) {
  // Collective whenever this group has other ranks: they all call it.
  if (size_ == 1)
    return makeSelfCommunicator(worldRanks_[0], std::move(name));
  return splitGroup(color, key, std::move(worldRanks), std::move(name));
}

} // namespace comm
} // namespace weft
