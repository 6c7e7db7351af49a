#include "kinds/dense/map_leaves.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <exception>
#include <stdexcept>

#include "kinds/kind_cast.h"
#include "core/format.h"
#include "core/kind_ops.h"
#include "core/nesting.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/non_tensor.h"

namespace tensordict::detail {


namespace {

struct Mapper {
  const std::vector<PieceMeta>& metas;
  std::optional<at::Device> device;
  OpKind kind;
  LeafFn fn;
  const char* op;
  std::size_t source_dims;
  ShapeCheck check;
  std::vector<std::string> path;  // for messages
  // Where fn reads the batch dim count of the level being walked (when set).
  int64_t* level_dims = nullptr;
  const NestedOp* nested_op = nullptr;

  // Every result must start with its level's batch size: code after this
  // (reshape, index, memmap) slices leaf sizes by the batch dims, so a
  // shorter leaf must not get in (a user's apply function can return anything).
  // Called only under ShapeCheck::Results: the test stays at the call site,
  // where it costs nothing per leaf for the planned ops.
  void check_results(const at::Tensor* outs, const std::vector<PieceMeta>& level_metas, const std::string& key,
                     const char* what) {
    for (std::size_t i = 0; i < level_metas.size(); ++i) {
      if (!outs[i].defined() || leaf_starts_with(outs[i], level_metas[i].batch_size)) continue;
      path.push_back(key);
      throw RuntimeError(fmt::format("{}: the result for key {} has {} {}, which does not start with the batch size {}",
                                           op, NestedKey(path).repr(), what, shape_string(leaf_shape(outs[i])),
                                           shape_string(level_metas[i].batch_size)));
    }
  }

  // fn(leaf, outs) for the leaf at `key`; its errors name the key.
  void call(const std::string& key, const at::Tensor& leaf, at::Tensor* outs) {
    try {
      fn(leaf, outs);
    } catch (...) {
      path.push_back(key);
      rethrow_for_key(op, NestedKey(path));
    }
  }

  // Piece metadata of a nested level: the pieces' batch and names followed by
  // the level's own dims past the source's.
  std::vector<PieceMeta> nested_metas(const TensorDictImpl& level) const {
    const auto extra = level.batch_size().slice(source_dims);
    const Names& names = level.names();
    std::vector<PieceMeta> out(metas.size());
    for (std::size_t i = 0; i < metas.size(); ++i) {
      out[i].batch_size = metas[i].batch_size;
      out[i].keep_nested_dims = metas[i].keep_nested_dims;
      out[i].nested_dims_as_ones = metas[i].nested_dims_as_ones;
      if (!metas[i].keep_nested_dims) continue;
      if (metas[i].nested_dims_as_ones) {
        out[i].batch_size.insert(out[i].batch_size.end(), extra.size(), 1);
      } else {
        out[i].batch_size.insert(out[i].batch_size.end(), extra.begin(), extra.end());
      }
      // The nested level's own dims keep their names even when the result's
      // shared dims have none (tensordict: td[0][""] keeps "d").
      const auto own_begin = names.begin() + static_cast<std::ptrdiff_t>(std::min(source_dims, names.size()));
      const bool own_named = std::any_of(own_begin, names.end(), [](const auto& n) { return n.has_value(); });
      if (!metas[i].names.empty() || own_named) {
        out[i].names = metas[i].names.empty() ? Names(metas[i].batch_size.size(), std::nullopt) : metas[i].names;
        out[i].names.insert(out[i].names.end(), own_begin, names.end());
      }
    }
    return out;
  }

  // A nested lazy stack whose stack dim lies past the source's batch dims:
  // the op reaches the same leading dims of every member, so it runs member
  // by member and the result stays a lazy stack, as in tensordict (whose
  // members may hold keys and shapes that no dense stack could). A leafwise
  // op that keeps the batch size does so across the stack dim too. Null
  // otherwise (the lazy stack is then stacked).
  const Stacked* member_wise(const TensorDictImpl& level) const {
    auto lazy = as_stacked(level);
    if (!lazy) return nullptr;
    // (A stack dim kept as size 1 is no stack of its members.)
    const bool keeps_dims = std::all_of(metas.begin(), metas.end(),
                                        [](const PieceMeta& m) { return m.keep_nested_dims && !m.nested_dims_as_ones; });
    if (!keeps_dims) return nullptr;
    if (static_cast<std::size_t>(lazy->stack_dim()) >= source_dims) return lazy;
    const auto source_batch = level.batch_size().slice(0, source_dims);
    const bool keeps_batch = std::all_of(metas.begin(), metas.end(), [&](const PieceMeta& m) { return m.batch_size == source_batch; });
    return kind == OpKind::Leafwise && keeps_batch ? lazy : nullptr;
  }

  std::vector<TensorDict> run_members(const Stacked& lazy) {
    const std::size_t n = metas.size();
    // Inside the source's batch (a leafwise op): every member keeps its own
    // batch size and names, and the stack dim stays where it is.
    const bool inside = static_cast<std::size_t>(lazy.stack_dim()) < source_dims;
    std::vector<std::vector<TensorDict>> members(n);
    for (const auto& member : lazy.members()) {
      const TensorDictImpl& m = *member.impl();
      std::vector<std::shared_ptr<DenseImpl>> results;
      if (inside) {  // the member is the source of its own walk
        const std::vector<PieceMeta> same(n, PieceMeta{m.batch_size().vec(), m.names()});
        Mapper walk{same, device, kind, fn, op, m.batch_size().size(), check, path, level_dims, nested_op};
        results = walk.run(m, same);
      } else {
        results = run(m, nested_metas(m));
      }
      for (std::size_t i = 0; i < n; ++i) members[i].emplace_back(std::move(results[i]));
    }
    const auto past_source = lazy.stack_dim() - static_cast<int64_t>(source_dims);
    std::vector<TensorDict> out;
    for (std::size_t i = 0; i < n; ++i) {
      const auto stack_dim = inside ? lazy.stack_dim() : static_cast<int64_t>(metas[i].batch_size.size()) + past_source;
      out.emplace_back(lazy.named_like(std::move(members[i]), stack_dim));
    }
    return out;
  }

  std::vector<std::shared_ptr<DenseImpl>> run(const TensorDictImpl& level, const std::vector<PieceMeta>& level_metas) {
    NestingGuard guard(op);
    if (level_dims) *level_dims = static_cast<int64_t>(level.batch_size().size());
    const std::size_t n = level_metas.size();
    std::vector<std::vector<Value>> values(n);
    for (auto& v : values) v.reserve(level.num_keys());

    std::shared_ptr<const KeyTable> table;
    std::shared_ptr<KeyTable> built;
    // The results share a dense level's key table (their values fill its
    // slots) unless it has holes (for_each skips them).
    if (auto dense = kind_cast<DenseImpl>(&level); dense && !dense->key_table()->has_holes()) {
      table = dense->key_table();
    } else {
      built = std::make_shared<KeyTable>();
    }

    std::vector<at::Tensor> outs(n);
    level.for_each([&](const std::string& key, const Value& value) {
      if (built) built->push_back(key);
      if (value.is_unbatched()) {
        // tensordict's UnbatchedTensor: batch ops and folds carry it
        // unchanged (the same tensor in every piece); value ops apply to it
        // as to any tensor, whatever its shape, and it stays unbatched.
        if (kind == OpKind::Batch || kind == OpKind::Fold) {
          for (std::size_t i = 0; i < n; ++i) values[i].push_back(value);
          return;
        }
        call(key, value.tensor(), outs.data());
        for (std::size_t i = 0; i < n; ++i) values[i].emplace_back(UnbatchedTensor(std::move(outs[i])));
        return;
      }
      if (value.is_tensor()) {
        call(key, value.tensor(), outs.data());
        if (check == ShapeCheck::Results) check_results(outs.data(), level_metas, key, "shape");
        for (std::size_t i = 0; i < n; ++i) values[i].emplace_back(std::move(outs[i]));
      } else if (value.is_non_tensor()) {
        const NonTensorData& data = value.non_tensor();
        if (kind == OpKind::Fold && data.is_stack()) {
          path.push_back(key);
          throw ValueError(
              fmt::format("{}: key {} holds a non-tensor stack, whose elements it cannot carry; exclude it first", op,
                          NestedKey(path).repr()));
        }
        if (kind != OpKind::Batch || !data.is_stack()) {
          for (std::size_t i = 0; i < n; ++i) values[i].push_back(value);
          return;
        }
        call(key, data.ids(), outs.data());
        if (check == ShapeCheck::Results) check_results(outs.data(), level_metas, key, "non-tensor stack shape");
        for (std::size_t i = 0; i < n; ++i) values[i].emplace_back(NonTensorData::from_ids(data.pool(), std::move(outs[i])));
      } else {
        path.push_back(key);
        const TensorDictImpl& nested = *value.impl();
        if (auto lazy = member_wise(nested)) {
          auto results = run_members(*lazy);
          for (std::size_t i = 0; i < n; ++i) values[i].emplace_back(std::move(results[i]));
        } else if (nested_op && as_stacked(nested)) {
          std::vector<TensorDict> results;
          try {
            results = (*nested_op)(value.tensordict());
          } catch (...) {
            rethrow_for_key(op, NestedKey(path));
          }
          for (std::size_t i = 0; i < n; ++i) values[i].emplace_back(std::move(results[i]));
        } else {
          auto results = run(nested, nested_metas(nested));
          for (std::size_t i = 0; i < n; ++i) values[i].emplace_back(TensorDict(std::move(results[i])));
        }
        if (level_dims) *level_dims = static_cast<int64_t>(level.batch_size().size());  // back from the nested level
        path.pop_back();
      }
    });
    if (built) table = built;

    std::vector<std::shared_ptr<DenseImpl>> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      out.push_back(std::make_shared<DenseImpl>(table, std::move(values[i]), level_metas[i].batch_size, device,
                                                level_metas[i].names));
    }
    return out;
  }
};

}  // namespace

TensorDict with_lock_kept(const TensorDict& source, TensorDict out) {
  const bool keeps = kind_ops(*source.impl()).to_keeps_lock;
  if (keeps && source.is_locked() && !out.is_locked()) out.lock_();
  return out;
}


namespace {
void walk_tensors(const TensorDictImpl& source, c10::function_ref<void(const at::Tensor&)> fn, const char* op,
                  bool members) {
  std::vector<std::string> path;
  auto walk = [&](auto&& self, const TensorDictImpl& level) -> void {
    NestingGuard guard(op);
    if (members) {
      if (const auto* lazy = as_stacked(level)) {
        for (const TensorDict& m : lazy->members()) self(self, *m.impl());
        return;
      }
    }
    level.for_each([&](const std::string& key, const Value& value) {
      path.push_back(key);
      if (value.is_tensor()) {
        try {
          fn(value.tensor());
        } catch (...) {
          rethrow_for_key(op, NestedKey(path));
        }
      } else if (value.is_tensordict()) {
        self(self, *value.impl());
      }
      path.pop_back();
    });
  };
  walk(walk, source);
}
}  // namespace

void for_each_tensor(const TensorDictImpl& source, c10::function_ref<void(const at::Tensor&)> fn, const char* op) {
  walk_tensors(source, fn, op, /*members=*/false);
}

void for_each_member_tensor(const TensorDictImpl& source, c10::function_ref<void(const at::Tensor&)> fn, const char* op) {
  walk_tensors(source, fn, op, /*members=*/true);
}

std::vector<std::shared_ptr<DenseImpl>> map_leaves(const TensorDictImpl& source, const std::vector<PieceMeta>& metas,
                                                   std::optional<at::Device> device, OpKind kind, LeafFn fn, const char* op,
                                                   ShapeCheck check, const NestedOp* nested) {
  Mapper mapper{metas, device, kind, fn, op, source.batch_size().size(), check, {}, nullptr, nested};
  return mapper.run(source, metas);
}

std::shared_ptr<DenseImpl> map_leaves(const TensorDictImpl& source, PieceMeta meta, std::optional<at::Device> device,
                                      OpKind kind, c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op,
                                      ShapeCheck check, const NestedOp* nested) {
  std::vector<PieceMeta> metas{std::move(meta)};
  auto each = [&](const at::Tensor& leaf, at::Tensor* out) { out[0] = fn(leaf); };
  return map_leaves(source, metas, device, kind, each, op, check, nested).front();
}

std::shared_ptr<DenseImpl> map_leaves_by_level(const TensorDictImpl& source, PieceMeta meta, std::optional<at::Device> device,
                                               OpKind kind, c10::function_ref<at::Tensor(const at::Tensor&, int64_t)> fn,
                                               const char* op) {
  std::vector<PieceMeta> metas{std::move(meta)};
  int64_t level_dims = 0;
  auto each = [&](const at::Tensor& leaf, at::Tensor* out) { out[0] = fn(leaf, level_dims); };
  Mapper mapper{metas, device, kind, each, op, source.batch_size().size(), ShapeCheck::Results, {}, &level_dims};
  return mapper.run(source, metas).front();
}

}  // namespace tensordict::detail
