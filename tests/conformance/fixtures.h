// tensordict's test fixture kinds (test/_utils_internal.py,
// TestTensorDictsBase), built the same way in C++: every kind has batch size
// [4, 3, 2, 1] and float leaves "a" [.., 5], "b" [.., 10] and int64 "c"
// [.., 3]. Conformance cases run over all of them, as tensordict's
// parametrized tests do over td_name.
#pragma once

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <tensordict/tensordict.h>
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../message_of.h"
#include "../temp_dir.h"

namespace conformance {

using tensordict::TensorDict;
using tensordict::TensorDict;

// One fixture: the tensordict, and the directory or file it lives in.
struct Fixture {
  std::string name;
  TensorDict td;
  std::shared_ptr<td_test::TempDir> dir;
};

// The three leaves over batch `batch`.
inline TensorDict leaves(at::IntArrayRef batch) {
  auto with = [&](std::vector<int64_t> feature) {
    std::vector<int64_t> shape(batch.begin(), batch.end());
    shape.insert(shape.end(), feature.begin(), feature.end());
    return shape;
  };
  return TensorDict(
      {{"a", at::randn(with({5}))}, {"b", at::randn(with({10}))}, {"c", at::randint(10, with({3}), at::kLong)}}, batch);
}

inline TensorDict nested(at::IntArrayRef batch) {
  TensorDict td = leaves(batch);
  td.set("my_nested_td", TensorDict({{"inner", at::randn({4, 3, 2, 1, 2})}}, batch));
  return td;
}

inline Fixture make_fixture(const std::string& name) {
  using at::indexing::Slice;
  at::manual_seed(0);
  if (name == "td") return {name, leaves({4, 3, 2, 1}), nullptr};
  if (name == "nested_td") return {name, nested({4, 3, 2, 1}), nullptr};
  if (name == "nested_stacked_td") {
    std::vector<TensorDict> parts;
    for (auto& p : nested({4, 3, 2, 1}).unbind(1)) parts.push_back(p.clone());
    return {name, tensordict::lazy_stack(parts, 1), nullptr};
  }
  if (name == "stacked_td") return {name, tensordict::lazy_stack({leaves({4, 3, 1}), leaves({4, 3, 1})}, 2), nullptr};
  if (name == "idx_td") return {name, leaves({2, 4, 3, 2, 1}).index({1}), nullptr};
  if (name == "sub_td") return {name, leaves({2, 4, 3, 2, 1}).get_sub_tensordict({1}), nullptr};
  if (name == "sub_td2") return {name, leaves({4, 2, 3, 2, 1}).get_sub_tensordict({Slice(), 1}), nullptr};
  if (name == "memmap_td") {
    auto dir = std::make_shared<td_test::TempDir>();
    TensorDict td = leaves({4, 3, 2, 1});
    td.memmap_((*dir / "td").string());
    return {name, td, dir};
  }
  if (name == "permute_td") return {name, leaves({3, 1, 4, 2}).permute({2, 0, 3, 1}), nullptr};
  if (name == "unsqueezed_td") return {name, leaves({4, 3, 2}).unsqueeze(-1), nullptr};
  if (name == "squeezed_td") return {name, leaves({4, 3, 1, 2, 1}).squeeze(2), nullptr};
  if (name == "td_reset_bs") {
    TensorDict td = leaves({4, 3, 2, 1});
    td.set_batch_size({4, 3, 2});
    td.set_batch_size({4, 3, 2, 1});
    return {name, td, nullptr};
  }
  if (name == "td_h5") {
    auto dir = std::make_shared<td_test::TempDir>();
    return {name, tensordict::PersistentTensorDict::from_dict(nested({4, 3, 2, 1}), (*dir / "td.h5").string()), dir};
  }
  if (name == "td_with_non_tensor") {
    TensorDict td = leaves({4, 3, 2, 1});
    td.set_non_tensor({"data", "non_tensor"}, "some text data");
    return {name, td, nullptr};
  }
  throw std::invalid_argument("no fixture " + name);
}

inline const std::vector<std::string>& fixture_names() {
  static const std::vector<std::string> names = {
      "td",        "nested_td",  "nested_stacked_td", "stacked_td",  "idx_td",      "sub_td", "sub_td2",
      "memmap_td", "permute_td", "unsqueezed_td",     "squeezed_td", "td_reset_bs", "td_h5",  "td_with_non_tensor"};
  return names;
}

// The sub-tensordict fixtures (views, which tensordict's tests often treat apart).
inline bool is_sub_td(const std::string& name) { return name == "sub_td" || name == "sub_td2"; }

// Runs `body` on every fixture kind, naming the kind in failures.
inline void for_each_fixture(const std::function<void(const std::string&, TensorDict&)>& body) {
  for (const auto& name : fixture_names()) {
    INFO("fixture " << name);
    Fixture f = make_fixture(name);
    body(name, f.td);
  }
}

// The tensor leaves of `td` (non-tensor data left out), each copied: the
// values before an op, to compute its expected result from.
inline std::vector<std::pair<tensordict::NestedKey, at::Tensor>> snapshot(const TensorDict& td) {
  std::vector<std::pair<tensordict::NestedKey, at::Tensor>> out;
  for (const auto& [key, value] : td.items({.include_nested = true, .leaves_only = true})) {
    if (value.is_tensor()) out.emplace_back(key, value.tensor().clone());
  }
  return out;
}

inline bool is_lazy(const TensorDict& td) { return td.kind() == tensordict::Kind::LazyStack; }

// The tensor at `key` of `td` compared element by element.
inline bool same_tensor(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && at::equal(a, b);
}

}  // namespace conformance

#define CONF_MESSAGE(expr) ::td_test::message_of([&] { (void)(expr); })
