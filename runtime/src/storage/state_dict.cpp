// state_dict / load_state_dict in tensordict's structure.
#include "tensordict/detail/impl.h"
#include "tensordict/state_dict.h"
#include "tensordict/errors.h"

#include <stdexcept>

#include "kinds/dense/dense_impl.h"
#include "core/format.h"
#include "core/ivalue_dict.h"
#include "tensordict/base.h"

namespace tensordict {

namespace {

constexpr const char* kBatchSize = "__batch_size";
constexpr const char* kDevice = "__device";

StateDict empty_state_dict() { return detail::empty_ivalue_dict(); }

bool is_meta_key(const std::string& key) { return key == kBatchSize || key == kDevice; }

void add_meta(StateDict& out, const TensorDict& td) {
  out.insert(kBatchSize, c10::IValue(td.batch_size().vec()));
  out.insert(kDevice, td.device() ? c10::IValue(td.device()->str()) : c10::IValue());
}

void collect(const TensorDict& td, StateDict& out, const std::string& prefix, bool keep_vars, bool flatten) {
  td.impl()->for_each([&](const std::string& key, const Value& value) {
    if (value.is_tensor()) {
      out.insert(prefix + key, keep_vars ? value.tensor() : value.tensor().detach());
    } else if (value.is_tensordict()) {
      if (flatten) {
        collect(value.tensordict(), out, prefix + key + ".", keep_vars, true);
      } else {
        StateDict nested = empty_state_dict();
        collect(value.tensordict(), nested, "", keep_vars, false);
        add_meta(nested, value.tensordict());
        out.insert(key, nested);
      }
    }
  });
}

// "a.b" keys back into nested dicts (the meta keys stay at the top).
StateDict nest_flat_keys(const StateDict& flat) {
  StateDict out = empty_state_dict();
  for (const auto& entry : flat) {
    const std::string& key = entry.key();
    if (is_meta_key(key)) {
      out.insert(key, entry.value());
      continue;
    }
    StateDict level = out;
    std::size_t start = 0;
    for (std::size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', start)) {
      const std::string part = key.substr(start, dot - start);
      if (!level.contains(part)) level.insert(part, empty_state_dict());
      level = c10::impl::toTypedDict<std::string, c10::IValue>(level.at(part).toGenericDict());
      start = dot + 1;
    }
    level.insert(key.substr(start), entry.value());
  }
  return out;
}

// tensordict's rule: a locked tensordict gains no key.
void refuse_new_key_if_locked(const TensorDict& td, const std::string& key) {
  if (td.is_locked()) {
    throw RuntimeError(
        fmt::format("load_state_dict: cannot add key {} to a locked tensordict (unlock it first)", key));
  }
}

// strict compares the tensors: a level holding none (an empty nested
// tensordict, or its dict in a state dict) is neither missing nor extra, as
// in tensordict, whose flat state dicts have no entry for it.
bool holds_tensors(const StateDict& sd) {
  for (const auto& entry : sd) {
    if (is_meta_key(entry.key())) continue;
    const c10::IValue& v = entry.value();
    if (v.isTensor()) return true;
    if (v.isGenericDict() && holds_tensors(c10::impl::toTypedDict<std::string, c10::IValue>(v.toGenericDict()))) {
      return true;
    }
  }
  return false;
}
// The same of a tensordict's entry and of a level, from the keys' kinds: no
// entry is read (an h5 file's datasets stay on disk).
bool holds_tensors(const TensorDictImpl& level);
bool entry_holds_tensors(const TensorDictImpl& level, const std::string& key, EntryKind kind) {
  return kind == EntryKind::Tensor || (kind == EntryKind::TensorDict && holds_tensors(*level.find(key)->impl()));
}
bool holds_tensors(const TensorDictImpl& level) {
  bool found = false;
  level.for_each_key([&](const std::string& key, EntryKind kind) {
    found = found || entry_holds_tensors(level, key, kind);
  });
  return found;
}

void load_into(TensorDict td, const StateDict& sd, bool strict, bool assign, const std::vector<std::string>& path) {
  auto where = [&](const std::string& key) {
    std::vector<std::string> p = path;
    p.push_back(key);
    return NestedKey(p).repr();
  };
  for (const auto& entry : sd) {
    const std::string& key = entry.key();
    if (is_meta_key(key)) continue;
    const c10::IValue& v = entry.value();
    auto existing = td.impl()->find(key);
    if (v.isTensor()) {
      if (!existing) {
        if (strict && !assign)
          throw RuntimeError(
              fmt::format("load_state_dict: key {} is in the state dict but not in the tensordict", where(key)));
        refuse_new_key_if_locked(td, where(key));
        td.impl()->insert(key, v.toTensor());
      } else if (assign) {
        td.impl()->insert(key, v.toTensor());
      } else {
        td.set_(key, v.toTensor());
      }
    } else if (v.isGenericDict()) {
      const StateDict nested = c10::impl::toTypedDict<std::string, c10::IValue>(v.toGenericDict());
      if (!existing) {
        if (strict && !assign && holds_tensors(nested))
          throw RuntimeError(
              fmt::format("load_state_dict: key {} is in the state dict but not in the tensordict", where(key)));
        refuse_new_key_if_locked(td, where(key));
        TensorDict created(TensorDict(std::make_shared<detail::DenseImpl>(std::vector<int64_t>{}, td.device(), Names{})));
        td.impl()->insert(key, Value(created));
        existing = td.impl()->find(key);
      }
      std::vector<std::string> sub = path;
      sub.push_back(key);
      load_into(existing->tensordict(), nested, strict, assign, sub);
    } else {
      throw TypeError(
          fmt::format("load_state_dict: entry {} is a {}, expected a tensor or a dict", where(key), v.tagKind()));
    }
  }
  if (strict) {
    const TensorDictImpl& level = *td.impl();
    level.for_each_key([&](const std::string& key, EntryKind kind) {
      if (entry_holds_tensors(level, key, kind) && !sd.contains(key)) {
        throw RuntimeError(
            fmt::format("load_state_dict: key {} is in the tensordict but not in the state dict", where(key)));
      }
    });
  }
  if (sd.contains(kBatchSize)) td.set_batch_size(sd.at(kBatchSize).toIntVector());
  if (sd.contains(kDevice)) {
    const c10::IValue& device = sd.at(kDevice);
    std::optional<at::Device> wanted;
    if (!device.isNone()) wanted = at::Device(device.toStringRef());
    td.impl()->set_meta(td.batch_size().vec(), wanted, td.names());
  }
}

}  // namespace

StateDict TensorDict::state_dict(const StateDictOptions& options) const {
  const auto keep_vars = options.keep_vars;
  const auto flatten = options.flatten;
  StateDict out = empty_state_dict();
  collect(*this, out, "", keep_vars, flatten);
  add_meta(out, *this);
  return out;
}

TensorDict& TensorDict::load_state_dict(const StateDict& state_dict, const LoadStateDictOptions& options) {
  const auto strict = options.strict;
  const auto assign = options.assign;
  const auto from_flatten = options.from_flatten;
  load_into(*this, from_flatten ? nest_flat_keys(state_dict) : state_dict, strict, assign, {});
  return *this;
}

}  // namespace tensordict
