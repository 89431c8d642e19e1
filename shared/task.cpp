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

}  // namespace ss::detail
