// Locking: lock_, unlock_ and the scoped guard.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/nesting.h"
#include "tensordict/base.h"
#include "tensordict/detail/impl.h"

namespace tensordict {

namespace {
constexpr const char* kLockError =
    "Cannot modify locked TensorDict. For in-place modification, consider using the `set_()` method and make sure the "
    "key is present.";
}  // namespace

void TensorDict::throw_locked() { throw RuntimeError(kLockError); }

bool TensorDictImpl::derived_lock() const {
  const TensorDictImpl* source = lock_source();
  return source ? source->is_locked() : locked_;
}

TensorDict& TensorDict::lock_() {
  if (impl_->lock_source()) {
    // tensordict's rule: locking a view would lock the rest of its source.
    if (!is_locked()) throw RuntimeError("Cannot lock a " + std::string(type_name()) + ". Lock the parent tensordict instead.");
    return *this;
  }
  // Locked through its parts alone (a lazy stack whose members are all
  // locked): tensordict's lock_ is then a no-op, so the members stay free
  // to be unlocked on their own.
  if (impl_->is_locked() && !impl_->locked_) return *this;
  detail::NestingGuard guard("lock_");
  impl_->locked_ = true;
  impl_->for_each_child([&](const TensorDict& child_handle) {
    if (child_handle.impl_->lock_source()) return;  // a view follows its own source
    TensorDict child = child_handle;
    auto& parents = child.impl_->lock_parents_;
    const bool known = std::any_of(parents.begin(), parents.end(), [&](const auto& p) { return p.lock().get() == impl_.get(); });
    if (!known) parents.push_back(impl_);
    child.lock_();
  });
  return *this;
}

namespace {
// tensordict's message (base.py _check_unlock).
constexpr const char* kLockedGraphError =
    "Cannot unlock a tensordict that is part of a locked graph. Unlock the root tensordict first. If the tensordict is "
    "part of multiple graphs, group the graphs under a common tensordict and unlock this root.";
}  // namespace

TensorDict& TensorDict::unlock_() {
  if (impl_->lock_source()) {
    if (is_locked()) throw RuntimeError("Cannot unlock a " + std::string(type_name()) + ". Unlock the parent tensordict instead.");
    return *this;
  }
  detail::NestingGuard guard("unlock_");
  auto locked = [](const auto& p) {
    auto parent = p.lock();
    return parent && parent->is_locked();
  };
  if (std::any_of(impl_->lock_parents_.begin(), impl_->lock_parents_.end(), locked)) {
    throw RuntimeError(kLockedGraphError);
  }
  // tensordict's rule (base.py unlock_): the whole tree below is unlocked;
  // if a nested tensordict is still held by a locked parent outside it, the
  // call fails and this tensordict is locked again.
  std::vector<TensorDict> nested;
  auto unlock_tree = [&](auto&& self, TensorDict level) -> void {
    level.impl_->locked_ = false;
    // An unlocked tensordict may gain, lose or replace entries, which its
    // consolidated storage would no longer describe; nor is it shared any
    // more (tensordict's rule: a new entry would not be in shared memory),
    // although its leaves stay where they are.
    level.impl_->consolidated_storage_ = at::Tensor();
    level.impl_->shared_ = false;
    level.impl_->for_each_child([&](const TensorDict& child) {
      if (child.impl_->lock_source()) return;  // a view follows its own source
      nested.push_back(child);
      self(self, child);
    });
  };
  unlock_tree(unlock_tree, *this);
  for (auto& child : nested) {
    auto& parents = child.impl_->lock_parents_;
    std::erase_if(parents, [&](const auto& p) { return !locked(p); });
    if (!parents.empty()) {
      lock_();
      throw RuntimeError(kLockedGraphError);
    }
  }
  return *this;
}

LockGuard::LockGuard(TensorDict td, Mode mode) : td_(std::move(td)), was_locked_(td_.is_locked()) {
  if (mode == Lock) {
    td_.lock_();
  } else {
    td_.unlock_();
  }
}

LockGuard::~LockGuard() {
  if (was_locked_ == td_.is_locked()) return;
  try {
    if (was_locked_) {
      td_.lock_();
    } else {
      td_.unlock_();
    }
  } catch (...) {
    // A destructor must not throw; the state the guard found is restored
    // whenever that is allowed (unlock_ refuses while a parent is locked).
  }
}

}  // namespace tensordict
