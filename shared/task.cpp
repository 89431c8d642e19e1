#include "shared/task.h"

namespace ss::detail {

#if !SS_SYMMETRIC_TRANSFER
void resume_continuation(PromiseBase& promise) noexcept {
  if (!promise.inline_start) promise.continuation.resume();
}

void resume_parent_if_last(WhenAllCounter& counter) noexcept {
  if (--counter.remaining == 0) counter.parent.resume();
}
#endif

WhenAllDrivers::~WhenAllDrivers() {
  for (auto h : drivers) h.destroy();
}

void WhenAllDrivers::add(DriverTask driver) {
  driver.h.promise().counter = this;
  drivers.push_back(driver.h);
}

bool WhenAllDrivers::start(co::coroutine_handle<> parent) {
  this->parent = parent;
  remaining = drivers.size() + 1;  // +1: a guard so no child resumes us before we return
  for (auto h : drivers) h.resume();
  return --remaining != 0;  // every child finished synchronously: do not suspend
}

}  // namespace ss::detail
