// The storage of a SubTensorDict: a source and a resolved index (private).
#pragma once

#include <vector>

#include "tensordict/base.h"
#include "tensordict/detail/impl.h"

namespace tensordict::detail {

class SubTensorDictImpl final : public TensorDictImpl {
 public:
  SubTensorDictImpl(TensorDict source, std::vector<TensorIndex> index);

  static constexpr Kind kKind = Kind::SubView;
  Kind kind() const override { return kKind; }
  at::IntArrayRef batch_size() const override { return resolved_.result_batch_size(); }
  std::optional<at::Device> device() const override { return source_.device(); }
  const Names& names() const override { return names_; }
  void set_meta(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names) override;

  std::size_t num_keys() const override { return source_.num_keys(); }
  void for_each_key(c10::function_ref<void(const std::string&, EntryKind)> fn) const override;
  void for_each(c10::function_ref<void(const std::string&, const Value&)> fn) const override;
  std::optional<Value> find(const std::string& key) const override;
  void insert(const std::string& key, Value value) override;
  bool erase(const std::string& key) override;
  void rename(const std::string& from, const std::string& to) override;
  void assign(const std::string& key, const at::Tensor& value) override;
  // A view is locked exactly when its source is (tensordict's rule).
  const TensorDictImpl* lock_source() const override { return source_.impl().get(); }
  // Shared exactly when its source is; its leaves live in the source, so
  // share_memory_() refuses (tensordict's rules and message).
  bool marked_shared() const override { return source_.impl()->marked_shared(); }
  void check_share_memory() const override;
  // Basic indices give views of the source's tensors; advanced ones give
  // copies, and so does a source that builds its tensors (a lazy stack).
  bool entries_alias_storage() const override { return resolved_.is_view() && source_.impl()->entries_alias_storage(); }

  const TensorDict& source() const { return source_; }

 private:
  TensorDict source_;
  std::vector<TensorIndex> index_;
  BatchIndex resolved_;
  Names names_;
};

}  // namespace tensordict::detail
