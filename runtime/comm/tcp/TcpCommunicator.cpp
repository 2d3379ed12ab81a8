//===- TcpCommunicator.cpp - Ranks that a torchrun-style launcher started
//--===//
//
// A world of RANK / WORLD_SIZE processes that meet at MASTER_ADDR:
// MASTER_PORT, with no MPI launcher around them. Rank 0 listens there; every
// other rank opens a listening socket of its own, reports its port to rank 0
// and receives everybody's address, then each pair of ranks holds one TCP
// connection (the lower rank accepts).
//
// One receiver thread per process reads every connection into a mailbox
// keyed by (communicator, sender, tag), so a send never waits for its
// receiver to be ready: sends write at once, receives are taken from the
// mailbox when their transfer is polled. A collective is a set of such
// messages: every member sends its contribution to every other member and
// combines what it receives in group-index order, so every member computes
// the same bits. Collectives take negative tags from a per-communicator
// sequence (all members start collectives in the same order); point-to-point
// tags are the caller's (non-negative). A receive from a rank whose
// connection closed fails with a message naming the operation, the group and
// that rank.
//
// Meant for a handful of CPU ranks on a node or a small cluster: traffic per
// rank grows with the group size (no ring or tree algorithms).
//
//===----------------------------------------------------------------------===//
#include "../CommInternal.h"

#include "weft/runtime/Diagnostics.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <tuple>
#include <unistd.h>

namespace weft {
namespace comm {

namespace {

struct FrameHeader {
  uint64_t comm;
  int64_t tag;
  uint64_t bytes;
};

bool writeAll(int fd, const void *data, size_t bytes) {
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool readAll(int fd, void *data, size_t bytes) {
  char *p = static_cast<char *>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

void tuneSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/// A listening IPv4 socket on `port` (0: any free port), or -1.
int listenOn(int port, int backlog, std::string &error) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
      ::listen(fd, backlog) != 0) {
    error = "cannot listen on port " + std::to_string(port) + ": " +
            std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

int boundPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  return ntohs(addr.sin_port);
}

/// Accepts one connection, waiting at most until `deadline`; -1 on timeout.
int acceptBefore(int listener, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0)
      return -1;
    pollfd p{listener, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (r < 0 && errno != EINTR)
      return -1;
    if (r > 0) {
      int fd = ::accept(listener, nullptr, nullptr);
      if (fd >= 0) {
        tuneSocket(fd);
        return fd;
      }
    }
  }
}

/// Connects to host:port, retrying until `deadline` (the peer may not be
/// listening yet); -1 on timeout.
int connectBefore(const std::string &host, int port,
                  std::chrono::steady_clock::time_point deadline,
                  std::string &error) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  int rc =
      getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    error = "cannot resolve '" + host + "': " + gai_strerror(rc);
    return -1;
  }
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
      freeaddrinfo(found);
      tuneSocket(fd);
      return fd;
    }
    int why = errno;
    if (fd >= 0)
      ::close(fd);
    if (std::chrono::steady_clock::now() >= deadline) {
      freeaddrinfo(found);
      error = "cannot connect to " + host + ":" + std::to_string(port) + ": " +
              std::strerror(why);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

/// The connections of one process to every other rank and the mailbox the
/// receiver thread fills.
class Network {
public:
  enum class Take { Pending, Done, Gone };

  ~Network() { close(); }

  bool open(int64_t rank, int64_t size, const std::string &masterAddr,
            int masterPort, std::string &error);

  /// Sends a frame to `peer`; a closed connection is fatal, naming `op`
  /// and `group` (the operation that sent).
  void send(int64_t peer, uint64_t comm, int64_t tag, const void *data,
            size_t bytes, const char *op, const std::string &group) {
    FrameHeader h{comm, tag, bytes};
    std::lock_guard<std::mutex> lock(*writeLocks_[peer]);
    if (!writeAll(fds_[peer], &h, sizeof h) ||
        (bytes > 0 && !writeAll(fds_[peer], data, bytes)))
      fatal(kExitFailure,
            "%s over %s: rank %lld closed its connection before this rank "
            "could send its part (it exited or was killed)",
            op, group.c_str(), static_cast<long long>(peer));
  }

  /// Moves the message (peer, comm, tag) into `data` once it has arrived.
  /// `got` is its size (checked by the caller).
  Take take(int64_t peer, uint64_t comm, int64_t tag, void *data,
            size_t capacity, size_t &got) {
    std::lock_guard<std::mutex> lock(mailLock_);
    auto it = mail_.find(std::make_tuple(peer, comm, tag));
    if (it == mail_.end() || it->second.empty())
      return closed_[peer] ? Take::Gone : Take::Pending;
    std::vector<uint8_t> &msg = it->second.front();
    got = msg.size();
    std::memcpy(data, msg.data(), std::min(capacity, got));
    it->second.pop_front();
    if (it->second.empty())
      mail_.erase(it);
    return Take::Done;
  }

  void close() {
    if (wake_[1] >= 0) {
      char c = 0;
      (void)!::write(wake_[1], &c, 1);
    }
    if (receiver_.joinable())
      receiver_.join();
    for (int &fd : fds_)
      if (fd >= 0) {
        ::close(fd);
        fd = -1;
      }
    for (int &fd : wake_)
      if (fd >= 0) {
        ::close(fd);
        fd = -1;
      }
  }

  /// For abortJob: every peer sees this rank's connections close.
  void shutdownAll() {
    for (int fd : fds_)
      if (fd >= 0)
        ::shutdown(fd, SHUT_RDWR);
  }

private:
  void receive();

  int64_t rank_ = 0, size_ = 1;
  std::vector<int> fds_;
  std::vector<std::unique_ptr<std::mutex>> writeLocks_;
  std::mutex mailLock_;
  std::map<std::tuple<int64_t, uint64_t, int64_t>,
           std::deque<std::vector<uint8_t>>>
      mail_;
  std::vector<bool> closed_;
  std::thread receiver_;
  int wake_[2] = {-1, -1};
};

bool Network::open(int64_t rank, int64_t size, const std::string &masterAddr,
                   int masterPort, std::string &error) {
  rank_ = rank;
  size_ = size;
  fds_.assign(size, -1);
  closed_.assign(size, false);
  for (int64_t i = 0; i < size; ++i)
    writeLocks_.push_back(std::make_unique<std::mutex>());
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(
                      static_cast<int64_t>(commTimeoutSeconds() * 1000));
  // Rank 0 learns each rank's listening port and address, then tells all.
  std::vector<uint32_t> hosts(size, 0);
  std::vector<int32_t> ports(size, 0);
  int listener = -1;
  auto fail = [&](const std::string &why) {
    error = why;
    if (listener >= 0)
      ::close(listener);
    return false;
  };
  if (rank == 0) {
    listener = listenOn(masterPort, static_cast<int>(size), error);
    if (listener < 0)
      return fail("rank 0 " + error + " (MASTER_PORT)");
    for (int64_t n = 1; n < size; ++n) {
      int fd = acceptBefore(listener, deadline);
      if (fd < 0)
        return fail("rank 0 waited " + secondsText(commTimeoutSeconds()) +
                    " s for the other ranks and only " + std::to_string(n) +
                    " of " + std::to_string(size) + " arrived");
      int64_t hello[2];
      if (!readAll(fd, hello, sizeof hello) || hello[0] < 1 ||
          hello[0] >= size || fds_[hello[0]] >= 0) {
        ::close(fd);
        return fail("rank 0 got an invalid greeting on MASTER_PORT (another "
                    "program, or two ranks with the same RANK)");
      }
      sockaddr_in peer{};
      socklen_t len = sizeof peer;
      getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &len);
      fds_[hello[0]] = fd;
      hosts[hello[0]] = peer.sin_addr.s_addr;
      ports[hello[0]] = static_cast<int32_t>(hello[1]);
    }
    ::close(listener);
    listener = -1;
    for (int64_t r = 1; r < size; ++r)
      if (!writeAll(fds_[r], hosts.data(), size * sizeof(uint32_t)) ||
          !writeAll(fds_[r], ports.data(), size * sizeof(int32_t)))
        return fail("rank 0 lost rank " + std::to_string(r) +
                    " while sending the address table");
  } else {
    listener = listenOn(0, static_cast<int>(size), error);
    if (listener < 0)
      return fail("rank " + std::to_string(rank) + ": " + error);
    int fd = connectBefore(masterAddr, masterPort, deadline, error);
    if (fd < 0)
      return fail("rank " + std::to_string(rank) + ": " + error +
                  " (MASTER_ADDR:MASTER_PORT, where rank 0 listens)");
    fds_[0] = fd;
    int64_t hello[2] = {rank, boundPort(listener)};
    if (!writeAll(fd, hello, sizeof hello) ||
        !readAll(fd, hosts.data(), size * sizeof(uint32_t)) ||
        !readAll(fd, ports.data(), size * sizeof(int32_t)))
      return fail("rank " + std::to_string(rank) +
                  ": rank 0 closed the connection while the ranks met (is "
                  "WORLD_SIZE the same on every rank?)");
    // Lower ranks (but 0) accept from higher ones: connect down, accept up.
    for (int64_t r = 1; r < rank; ++r) {
      char host[INET_ADDRSTRLEN] = {};
      in_addr a{};
      a.s_addr = hosts[r];
      inet_ntop(AF_INET, &a, host, sizeof host);
      int peer = connectBefore(host, ports[r], deadline, error);
      if (peer < 0)
        return fail("rank " + std::to_string(rank) + ": rank " +
                    std::to_string(r) + ": " + error);
      int64_t me = rank;
      if (!writeAll(peer, &me, sizeof me))
        return fail("rank " + std::to_string(rank) + ": lost rank " +
                    std::to_string(r));
      fds_[r] = peer;
    }
    for (int64_t n = rank + 1; n < size; ++n) {
      int peer = acceptBefore(listener, deadline);
      int64_t who = -1;
      if (peer < 0 || !readAll(peer, &who, sizeof who) || who <= rank ||
          who >= size || fds_[who] >= 0)
        return fail("rank " + std::to_string(rank) +
                    ": the higher ranks did not all connect");
      fds_[who] = peer;
    }
    ::close(listener);
    listener = -1;
  }
  if (::pipe(wake_) != 0)
    return fail(std::string("pipe: ") + std::strerror(errno));
  receiver_ = std::thread([this] { receive(); });
  return true;
}

void Network::receive() {
  std::vector<pollfd> polls;
  std::vector<int64_t> who;
  for (;;) {
    polls.clear();
    who.clear();
    polls.push_back({wake_[0], POLLIN, 0});
    who.push_back(-1);
    {
      std::lock_guard<std::mutex> lock(mailLock_);
      for (int64_t r = 0; r < size_; ++r)
        if (fds_[r] >= 0 && !closed_[r]) {
          polls.push_back({fds_[r], POLLIN, 0});
          who.push_back(r);
        }
    }
    if (::poll(polls.data(), polls.size(), -1) < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    if (polls[0].revents)
      return;
    for (size_t i = 1; i < polls.size(); ++i) {
      if (!polls[i].revents)
        continue;
      int64_t r = who[i];
      FrameHeader h{};
      std::vector<uint8_t> payload;
      bool ok = readAll(fds_[r], &h, sizeof h);
      if (ok) {
        payload.resize(h.bytes);
        ok = h.bytes == 0 || readAll(fds_[r], payload.data(), h.bytes);
      }
      std::lock_guard<std::mutex> lock(mailLock_);
      if (!ok)
        closed_[r] = true;
      else
        mail_[std::make_tuple(r, h.comm, h.tag)].push_back(std::move(payload));
    }
  }
}

template <typename T>
void combine(T *acc, const T *x, int64_t n, Reduction op) {
  for (int64_t i = 0; i < n; ++i) {
    switch (op) {
    case Reduction::Max:
      acc[i] = std::max(acc[i], x[i]);
      break;
    case Reduction::Min:
      acc[i] = std::min(acc[i], x[i]);
      break;
    default:
      acc[i] = acc[i] + x[i];
      break;
    }
  }
}

void combineAny(void *acc, const void *x, int64_t n, int64_t dtype,
                Reduction op) {
  switch (dtype) {
  case WEFT_F32:
    return combine(static_cast<float *>(acc), static_cast<const float *>(x), n,
                   op);
  case WEFT_F64:
    return combine(static_cast<double *>(acc), static_cast<const double *>(x),
                   n, op);
  case WEFT_I64:
    return combine(static_cast<int64_t *>(acc), static_cast<const int64_t *>(x),
                   n, op);
  case WEFT_I32:
    return combine(static_cast<int32_t *>(acc), static_cast<const int32_t *>(x),
                   n, op);
  default:
    fatal(kExitFailure, "internal error: reduction of dtype %s",
          weftDTypeName(dtype));
  }
}

/// Receives posted at start, taken from the mailbox when polled; `finish`
/// runs once all have arrived.
class Receives final : public Request::Transfer {
public:
  struct Item {
    int64_t peer; ///< world rank
    void *data;
    size_t bytes;
  };

  Receives(Network &net, uint64_t comm, int64_t tag, const char *op,
           std::string group)
      : net_(net), comm_(comm), tag_(tag), op_(op), group_(std::move(group)) {}

  void expect(int64_t peer, void *data, size_t bytes) {
    items_.push_back({peer, data, bytes});
  }
  void then(std::function<void()> finish) { finish_ = std::move(finish); }

  bool test() override {
    while (next_ < items_.size()) {
      Item &item = items_[next_];
      size_t got = 0;
      switch (net_.take(item.peer, comm_, tag_, item.data, item.bytes, got)) {
      case Network::Take::Pending:
        return false;
      case Network::Take::Gone:
        fatal(kExitFailure,
              "%s over %s: rank %lld closed its connection before sending "
              "its part (it exited or was killed)",
              op_, group_.c_str(), static_cast<long long>(item.peer));
      case Network::Take::Done:
        if (got != item.bytes)
          fatal(kExitFailure,
                "%s over %s: rank %lld sent %zu bytes where %zu were "
                "expected (the ranks run different programs)",
                op_, group_.c_str(), static_cast<long long>(item.peer), got,
                item.bytes);
        ++next_;
        break;
      }
    }
    if (finish_) {
      std::function<void()> f = std::move(finish_);
      finish_ = nullptr;
      f();
    }
    return true;
  }

private:
  Network &net_;
  uint64_t comm_;
  int64_t tag_;
  const char *op_;
  std::string group_;
  std::vector<Item> items_;
  size_t next_ = 0;
  std::function<void()> finish_;
};

class Done final : public Request::Transfer {
public:
  bool test() override { return true; }
};

using Bytes = std::shared_ptr<std::vector<uint8_t>>;

Bytes bytesOf(size_t n) { return std::make_shared<std::vector<uint8_t>>(n); }

class TcpCommunicator final : public Communicator {
public:
  TcpCommunicator(std::shared_ptr<Network> net, uint64_t id, int64_t rank,
                  std::vector<int64_t> worldRanks, std::string name)
      : Communicator(rank, static_cast<int64_t>(worldRanks.size()), worldRanks,
                     std::move(name)),
        net_(std::move(net)), id_(id) {}

  ~TcpCommunicator() override {
    // The world waits for every rank before the connections close, so no
    // rank sees another's exit as a failure.
    if (id_ == 0 && !aborted_) {
      barrier();
      net_->close();
    }
  }

  [[noreturn]] void abortJob(int code) override {
    aborted_ = true;
    std::fflush(stdout);
    std::fflush(stderr);
    net_->shutdownAll();
    std::_Exit(code);
  }

protected:
  TransferPtr startAllReduce(const void *in, void *out, int64_t count,
                             int64_t dtype, Reduction op) override {
    const size_t bytes = count * weftDTypeSize(dtype);
    const int64_t tag = nextTag();
    sendToOthers(tag, in, bytes, "all_reduce");
    // Contributions in group-index order; this rank's own is copied (in
    // may be out).
    Bytes all = bytesOf(bytes * size());
    std::memcpy(all->data() + bytes * rank(), in, bytes);
    return reduceBlocks(receiveBlocks(tag, "all_reduce", all->data(), bytes),
                        all, out, count, dtype, op);
  }

  TransferPtr startAllGather(const void *in, void *out, int64_t count,
                             int64_t elemSize) override {
    const size_t bytes = count * elemSize;
    uint8_t *blocks = static_cast<uint8_t *>(out);
    const void *mine = in ? in : blocks + bytes * rank();
    const int64_t tag = nextTag();
    sendToOthers(tag, mine, bytes, "all_gather");
    if (mine != blocks + bytes * rank())
      std::memmove(blocks + bytes * rank(), mine, bytes);
    return receiveBlocks(tag, "all_gather", blocks, bytes);
  }

  TransferPtr startReduceScatter(const void *in, void *out, int64_t count,
                                 int64_t dtype, Reduction op) override {
    const size_t bytes = count * weftDTypeSize(dtype);
    const uint8_t *blocks = static_cast<const uint8_t *>(in);
    const int64_t tag = nextTag();
    for (int64_t j = 0; j < size(); ++j)
      if (j != rank())
        net_->send(worldRanks()[j], id_, tag, blocks + bytes * j, bytes,
                   "reduce_scatter", name());
    Bytes parts = bytesOf(bytes * size());
    std::memcpy(parts->data() + bytes * rank(), blocks + bytes * rank(), bytes);
    return reduceBlocks(
        receiveBlocks(tag, "reduce_scatter", parts->data(), bytes), parts, out,
        count, dtype, op);
  }

  TransferPtr startAllToAll(const void *in, void *out, int64_t count,
                            int64_t elemSize) override {
    const size_t bytes = count * elemSize;
    const uint8_t *from = static_cast<const uint8_t *>(in);
    uint8_t *to = static_cast<uint8_t *>(out);
    const int64_t tag = nextTag();
    for (int64_t j = 0; j < size(); ++j)
      if (j != rank())
        net_->send(worldRanks()[j], id_, tag, from + bytes * j, bytes,
                   "all_to_all", name());
    std::memmove(to + bytes * rank(), from + bytes * rank(), bytes);
    return receiveBlocks(tag, "all_to_all", to, bytes);
  }

  TransferPtr startBroadcast(void *data, int64_t count, int64_t elemSize,
                             int64_t root) override {
    const size_t bytes = count * elemSize;
    const int64_t tag = nextTag();
    if (rank() == root) {
      sendToOthers(tag, data, bytes, "broadcast");
      return std::make_unique<Done>();
    }
    auto recv = receives(tag, "broadcast");
    recv->expect(worldRanks()[root], data, bytes);
    return recv;
  }

  TransferPtr startSend(const void *data, int64_t count, int64_t elemSize,
                        int64_t peer, int64_t tag) override {
    net_->send(worldRanks()[peer], id_, tag, data, count * elemSize, "send",
               name());
    return std::make_unique<Done>();
  }

  TransferPtr startRecv(void *data, int64_t count, int64_t elemSize,
                        int64_t peer, int64_t tag) override {
    auto recv = receives(tag, "recv");
    recv->expect(worldRanks()[peer], data, count * elemSize);
    return recv;
  }

  TransferPtr startBarrier() override {
    const int64_t tag = nextTag();
    sendToOthers(tag, nullptr, 0, "barrier");
    return receiveBlocks(tag, "barrier", nullptr, 0);
  }

  std::unique_ptr<Communicator> splitGroup(int64_t color, int64_t key,
                                           std::vector<int64_t> ranks,
                                           std::string name) override {
    // Every member splits this group in the same order: the count and the
    // color name the new group alike on all of them.
    uint64_t id = id_ * 1000003u + static_cast<uint64_t>(++splits_) * 7919u +
                  static_cast<uint64_t>(color) + 1;
    int64_t me = worldRanks()[rank()];
    int64_t index = 0;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == me)
        index = static_cast<int64_t>(i);
    return std::unique_ptr<Communicator>(new TcpCommunicator(
        net_, id, index, std::move(ranks), std::move(name)));
  }

private:
  int64_t nextTag() { return -(++sequence_); }

  void sendToOthers(int64_t tag, const void *data, size_t bytes,
                    const char *op) {
    for (int64_t j = 0; j < size(); ++j)
      if (j != rank())
        net_->send(worldRanks()[j], id_, tag, data, bytes, op, name());
  }

  std::unique_ptr<Receives> receives(int64_t tag, const char *op) {
    return std::make_unique<Receives>(*net_, id_, tag, op, name());
  }

  /// Receives every other member's `bytes` into its block of `blocks`
  /// (block i from group index i).
  std::unique_ptr<Receives> receiveBlocks(int64_t tag, const char *op,
                                          uint8_t *blocks, size_t bytes) {
    auto recv = receives(tag, op);
    for (int64_t i = 0; i < size(); ++i)
      if (i != rank())
        recv->expect(worldRanks()[i], blocks ? blocks + bytes * i : nullptr,
                     bytes);
    return recv;
  }

  /// Once `recv` has every block: out = the reduction of the blocks of
  /// `blocks` in group-index order (the same bits on every member).
  TransferPtr reduceBlocks(std::unique_ptr<Receives> recv, Bytes blocks,
                           void *out, int64_t count, int64_t dtype,
                           Reduction op) {
    const size_t bytes = count * weftDTypeSize(dtype);
    const int64_t n = size();
    recv->then([blocks, out, bytes, count, dtype, op, n] {
      std::memcpy(out, blocks->data(), bytes);
      for (int64_t i = 1; i < n; ++i)
        combineAny(out, blocks->data() + bytes * i, count, dtype, op);
    });
    return recv;
  }

  std::shared_ptr<Network> net_;
  uint64_t id_;
  int64_t sequence_ = 0, splits_ = 0;
  bool aborted_ = false;
};

} // namespace

std::unique_ptr<Communicator> openTcpWorld(int64_t rank, int64_t size,
                                           std::string &error) {
  const char *addr = std::getenv("MASTER_ADDR");
  const char *port = std::getenv("MASTER_PORT");
  if (!addr || !*addr || !port || !*port) {
    error = std::string("a torchrun-style launch (RANK, WORLD_SIZE) needs ") +
            "MASTER_ADDR and MASTER_PORT: where rank 0 listens for the " +
            "others" + (!addr || !*addr ? " (MASTER_ADDR is not set)" : "") +
            (!port || !*port ? " (MASTER_PORT is not set)" : "");
    return nullptr;
  }
  char *end = nullptr;
  long p = std::strtol(port, &end, 10);
  if (!end || *end || p < 1 || p > 65535) {
    error = std::string("invalid MASTER_PORT='") + port +
            "' (expected a TCP port, 1-65535)";
    return nullptr;
  }
  if (rank < 0 || rank >= size) {
    error = "RANK=" + std::to_string(rank) +
            " is not below WORLD_SIZE=" + std::to_string(size);
    return nullptr;
  }
  auto net = std::make_shared<Network>();
  if (!net->open(rank, size, addr, static_cast<int>(p), error))
    return nullptr;
  std::vector<int64_t> all(size);
  for (int64_t r = 0; r < size; ++r)
    all[r] = r;
  std::string name = "the world (ranks " + formatRanks(all) + ")";
  return std::unique_ptr<Communicator>(new TcpCommunicator(
      std::move(net), 0, rank, std::move(all), std::move(name)));
}

} // namespace comm
} // namespace weft
