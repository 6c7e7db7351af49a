// Locking: lock_, unlock_ and the scoped guard.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "nesting.h"
#include "tensordict/base.h"

namespace tensordict {

namespace {
constexpr const char* kLockError =
    "Cannot modify locked TensorDict. For in-place modification, consider using the `set_()` method and make sure the "
    "key is present.";
}  // namespace

void TensorDictBase::check_unlocked() const {
  if (impl_->is_locked()) throw std::runtime_error(kLockError);
}

TensorDictBase& TensorDictBase::lock_() {
  if (impl_->lock_source()) {
    // tensordict's rule: locking a view would lock the rest of its source.
    if (!is_locked()) throw std::runtime_error("Cannot lock a " + std::string(type_name()) + ". Lock the parent tensordict instead.");
    return *this;
  }
  detail::NestingGuard guard("lock_");
  impl_->locked_ = true;
  impl_->for_each_child([&](const TensorDictBase& child_handle) {
    if (child_handle.impl_->lock_source()) return;  // a view follows its own source
    TensorDictBase child = child_handle;
    auto& parents = child.impl_->lock_parents_;
    const bool known = std::any_of(parents.begin(), parents.end(), [&](const auto& p) { return p.lock().get() == impl_.get(); });
    if (!known) parents.push_back(impl_);
    child.lock_();
  });
  return *this;
}

TensorDictBase& TensorDictBase::unlock_() {
  if (impl_->lock_source()) {
    if (is_locked()) throw std::runtime_error("Cannot unlock a " + std::string(type_name()) + ". Unlock the parent tensordict instead.");
    return *this;
  }
  detail::NestingGuard guard("unlock_");
  for (const auto& parent : impl_->lock_parents_) {
    if (auto p = parent.lock(); p && p->is_locked()) {
      throw std::runtime_error("Cannot unlock a tensordict that is part of a locked tensordict: unlock the parent first");
    }
  }
  impl_->locked_ = false;
  // tensordict's rule: an unlocked tensordict may gain, lose or replace
  // entries, which its consolidated storage would no longer describe.
  impl_->consolidated_storage_ = at::Tensor();
  impl_->for_each_child([&](const TensorDictBase& child_handle) {
    if (child_handle.impl_->lock_source()) return;  // a view follows its own source
    TensorDictBase child = child_handle;
    auto& parents = child.impl_->lock_parents_;
    std::erase_if(parents, [&](const auto& p) {
      auto locked = p.lock();
      return !locked || locked.get() == impl_.get();
    });
    // Still held by another locked parent: it stays locked.
    const bool held = std::any_of(parents.begin(), parents.end(), [](const auto& p) {
      auto locked = p.lock();
      return locked && locked->is_locked();
    });
    if (!held) child.unlock_();
  });
  return *this;
}

LockGuard::LockGuard(TensorDictBase td, bool lock) : td_(std::move(td)), was_locked_(td_.is_locked()) {
  if (lock) {
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
