// Dim names: rename_, rename, refine_names.
#include <algorithm>
#include <stdexcept>

#include "kinds/dense/dense_impl.h"
#include "core/format.h"
#include "ops/copies.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/detail/shape_plan.h"

namespace tensordict {

TensorDict& TensorDict::rename_(const Names& names) {
  const Names checked = detail::checked_names(names, batch_size().size());
  // Keys first: a lazy stack builds only its nested levels, not its tensors.
  impl_->for_each_key([&](const std::string& key, EntryKind kind) {
    if (kind != EntryKind::TensorDict) return;
    TensorDict nested = impl_->find(key)->tensordict();
    Names inherited = checked;
    const Names& own = nested.names();
    inherited.insert(inherited.end(), own.begin() + static_cast<std::ptrdiff_t>(checked.size()), own.end());
    try {
      nested.rename_(inherited);
    } catch (const std::exception& e) {
      throw ValueError(fmt::format("rename_: nested tensordict {} cannot take names {}: {}", NestedKey(key).repr(),
                                   shape::names_repr(inherited), e.what()));
    }
  });
  impl_->set_meta(batch_size().vec(), device(), checked);
  return *this;
}

TensorDict& TensorDict::rename_(const std::string& old_name, const std::string& new_name) {
  Names names = this->names();
  auto it = std::find(names.begin(), names.end(), std::optional<std::string>(old_name));
  if (it == names.end()) {
    throw ValueError(fmt::format("rename_: no dim is named '{}' (names are {})", old_name, shape::names_repr(names)));
  }
  *it = new_name;
  return rename_(names);
}

TensorDict TensorDict::rename(const Names& names) const {
  TensorDict out = detail::dense_shallow_copy(*this, "rename");
  out.rename_(names);
  return out;
}

TensorDict TensorDict::rename(const std::string& old_name, const std::string& new_name) const {
  TensorDict out = detail::dense_shallow_copy(*this, "rename");
  out.rename_(old_name, new_name);
  return out;
}

TensorDict& TensorDict::refine_names(const Names& names) { return rename_(shape::refined_names(this->names(), names)); }

}  // namespace tensordict
