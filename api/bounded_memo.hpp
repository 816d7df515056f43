// A memo whose memory is bounded whatever the number of distinct keys (a server whose shapes vary
// meets new ones for ever). Two generations: when the current one holds `capacity` entries it
// becomes the previous one and the old previous one is dropped; a hit in the previous generation
// moves the entry back into the current one, so entries in use stay while unused ones age out.
// At most 2 x capacity entries. Not thread-safe (the runtime holds its mutex).
#pragma once

#include <cstddef>
#include <unordered_map>
#include <utility>

namespace tuned {

template <typename Key, typename Value, typename Hash>
class BoundedMemo {
 public:
  explicit BoundedMemo(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  /// The value for key, or null. Valid until the next put() or clear().
  const Value* find(const Key& key) {
    if (auto it = current_.find(key); it != current_.end()) return &it->second;
    auto old = previous_.find(key);
    if (old == previous_.end()) return nullptr;
    Value value = std::move(old->second);
    previous_.erase(old);
    return &insert(key, std::move(value));
  }

  void put(const Key& key, Value value) {
    if (auto it = current_.find(key); it != current_.end()) {
      it->second = std::move(value);
      return;
    }
    previous_.erase(key);
    insert(key, std::move(value));
  }

  void clear() {
    current_.clear();
    previous_.clear();
  }
  size_t size() const { return current_.size() + previous_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  Value& insert(const Key& key, Value value) {
    if (current_.size() >= capacity_) {
      previous_ = std::move(current_);
      current_ = {};
    }
    return current_.emplace(key, std::move(value)).first->second;
  }

  size_t capacity_;
  std::unordered_map<Key, Value, Hash> current_, previous_;
};

}  // namespace tuned
