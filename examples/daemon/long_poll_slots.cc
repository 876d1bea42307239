#include "long_poll_slots.h"

namespace tesserad {

std::shared_ptr<void> LongPollSlots::TryAcquire(const std::string& holder) {
  {
    std::lock_guard lock(mu_);
    int& open = open_[holder];
    if (open >= max_per_token_) return nullptr;
    ++open;
  }
  // The handle owns no object; its deleter gives the slot back.
  return std::shared_ptr<void>(this, [holder](LongPollSlots* slots) { slots->Release(holder); });
}

void LongPollSlots::Release(const std::string& holder) {
  std::lock_guard lock(mu_);
  auto it = open_.find(holder);
  if (it != open_.end() && --it->second == 0) open_.erase(it);
}

}  // namespace tesserad
