//===- Scratch.cpp - Reused scratch for transfers and started collectives -===//
#include "CommInternal.h"

#include <utility>

namespace weft {
namespace comm {

namespace {

/// Buffers given back, for the next takers. Never destroyed: a transfer may
/// end during exit.
std::vector<std::vector<uint8_t> *> &freeBuffers() {
  static auto *free = new std::vector<std::vector<uint8_t> *>();
  return *free;
}

/// At most this many buffers wait in the pool; more are freed.
constexpr size_t kKept = 8;

} // namespace

Scratch::Scratch(size_t bytes) {
  std::vector<std::vector<uint8_t> *> &free = freeBuffers();
  // The smallest that is large enough, else any (grown).
  auto best = free.end();
  for (auto it = free.begin(); it != free.end(); ++it)
    if ((*it)->size() >= bytes &&
        (best == free.end() || (*it)->size() < (*best)->size()))
      best = it;
  if (best == free.end() && !free.empty())
    best = free.begin();
  if (best != free.end()) {
    buffer_ = *best;
    free.erase(best);
  } else {
    buffer_ = new std::vector<uint8_t>();
  }
  if (buffer_->size() < bytes)
    buffer_->resize(bytes);
}

Scratch::Scratch(Scratch &&other) noexcept : buffer_(other.buffer_) {
  other.buffer_ = nullptr;
}

Scratch &Scratch::operator=(Scratch &&other) noexcept {
  std::swap(buffer_, other.buffer_);
  return *this;
}

Scratch::~Scratch() {
  if (!buffer_)
    return;
  std::vector<std::vector<uint8_t> *> &free = freeBuffers();
  if (free.size() < kKept)
    free.push_back(buffer_);
  else
    delete buffer_;
}

} // namespace comm
} // namespace weft
