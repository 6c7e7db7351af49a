#include "cpp_cases.h"

#include <nlohmann/json.hpp>

#include <tensordict/detail/tensorclass_memmap.h>
#include <tensordict/lazy.h>
#include <tensordict/memmap.h>
#include <tensordict/non_tensor.h>
#include <tensordict/persistent.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "canonical.h"

namespace interop {

using namespace tensordict;
namespace fs = std::filesystem;

at::Tensor values(at::IntArrayRef shape, at::ScalarType dtype) {
  int64_t numel = 1;
  for (auto s : shape) numel *= s;
  at::Tensor base = at::arange(numel, at::kDouble);
  if (dtype == at::kBool) return (base.remainder(3) == 0).reshape(shape);
  if (at::isComplexType(dtype)) {
    return at::complex(base * 0.5 - 1.25, base * -0.75 + 0.1).to(dtype).reshape(shape);
  }
  if (at::isFloatingType(dtype)) {
    at::Tensor t = (base * 1.37 - 2.5).to(dtype);
    if (numel >= 4) {
      t.index_put_({0}, -0.0);
      t.index_put_({1}, std::numeric_limits<double>::infinity());
      t.index_put_({2}, std::numeric_limits<double>::quiet_NaN());
    }
    return t.reshape(shape);
  }
  if (dtype == at::kByte) return (base * 37).remainder(256).to(dtype).reshape(shape);
  // Signed integers: negative values too, within int8's range.
  return (base * 7).remainder(200).sub(100).to(dtype).reshape(shape);
}

namespace {

const std::vector<at::ScalarType>& all_dtypes() {
  static const std::vector<at::ScalarType> dtypes{at::kBFloat16, at::kHalf,  at::kFloat, at::kDouble,
                                                  at::kComplexFloat, at::kComplexDouble, at::kBool, at::kByte,
                                                  at::kChar, at::kShort, at::kInt, at::kLong};
  return dtypes;
}

// One leaf per dtype (h5: bfloat16 is left out, h5py has no such type).
TensorDict dtypes_td(bool with_bfloat16) {
  TensorDict td({}, {3});
  for (auto dtype : all_dtypes()) {
    if (dtype == at::kBFloat16 && !with_bfloat16) continue;
    td.set(std::string(dtype_name(dtype)), values({3, 4}, dtype));
  }
  return td;
}

TensorDict nested_names() {
  TensorDict inner({{"deep", values({2, 3, 5}, at::kFloat)}}, {2, 3});
  TensorDict child({{"x", values({2, 3}, at::kLong)}, {"inner", inner}}, {2, 3});
  TensorDict td({{"obs", values({2, 4}, at::kFloat)}, {"child", child}}, {2});
  td.rename_(Names{"env"});
  td.get_td("child").rename_(Names{"env", "time"});
  return td;
}

TensorDict longer_nested_batch() {
  // The child's batch [2, 3, 4] is longer than the parent's [2].
  TensorDict child({{"y", values({2, 3, 4, 2}, at::kDouble)}}, {2, 3, 4});
  return TensorDict({{"x", values({2, 5}, at::kInt)}, {"child", child}}, {2});
}

TensorDict zero_element() {
  TensorDict empty_batch({{"z", values({0, 3}, at::kFloat)}}, {0});
  return TensorDict({{"no_features", values({3, 0}, at::kLong)},
                     {"no_rows", values({3, 0, 2}, at::kDouble)},
                     {"empty_batch", TensorDict({{"w", values({3, 0}, at::kBool)}}, {3, 0})},
                     {"regular", values({3}, at::kShort)}},
                    {3});
}

// Keys whose file names need encoding; `with_slash` also a key holding "/"
// (h5 would read it as a group path).
TensorDict encoded_keys(bool with_slash) {
  TensorDict td({{"with space", values({2}, at::kFloat)},
                 {"dot.ted", values({2}, at::kInt)},
                 {"..", values({2}, at::kLong)},
                 {"per%cent", values({2}, at::kByte)},
                 {"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac", values({2}, at::kDouble)},
                 {"sub level", TensorDict({{"a:b", values({2, 2}, at::kShort)}}, {2})}},
                {2});
  if (with_slash) td.set("sl/ash", values({2, 1}, at::kFloat));
  return td;
}

TensorDict non_tensor() {
  TensorDict td({{"x", values({3}, at::kFloat)}}, {3});
  td.set_non_tensor("text", "hello \xe2\x9c\x93");
  td.set_non_tensor("number", 42);
  td.set_non_tensor("real", 2.5);
  td.set_non_tensor("flag", true);
  td.set_non_tensor("list", Json::array({1, "two", 3.0}));
  td.set_non_tensor("dict", Json{{"a", 1}, {"b", Json::array({true, false})}});
  td.set("stack", Value(NonTensorData::stack({"a", "b", "c"}, {3})));
  td.set("nested", TensorDict({{"y", values({3, 2}, at::kInt)}}, {3}));
  td.get_td("nested").set_non_tensor("inner", "deep");
  return td;
}

LazyStackedTensorDict lazy_hetero() {
  TensorDict a({{"shared", values({2, 3}, at::kFloat)}, {"only_a", values({2}, at::kLong)}}, {2});
  TensorDict b({{"shared", values({2, 5}, at::kFloat)},
                {"only_b", TensorDict({{"z", values({2, 4}, at::kInt)}}, {2})}},
               {2});
  return lazy_stack({a, b}, 0);
}

// Members of different batch sizes: the stack's batch size is [2, -1].
LazyStackedTensorDict lazy_batches() {
  TensorDict a({{"x", values({2, 3}, at::kFloat)}, {"only_a", values({2}, at::kLong)}}, {2});
  TensorDict b({{"x", values({3, 3}, at::kFloat)}}, {3});
  return lazy_stack({a, b}, 0);
}

TensorDict dense_stack() {
  TensorDict a({{"x", values({3, 2}, at::kFloat)}, {"n", TensorDict({{"y", values({3}, at::kLong)}}, {3})}}, {3});
  TensorDict b(a.clone());
  b.apply_([](const at::Tensor& t) { return t * 2 + 1; });
  return stack({a, b}, 1);  // batch [3, 2]
}

// The tensorclass that run_interop.py defines as __main__.Obs.
constexpr const char* kObsType = "<class '__main__.Obs'>";

TensorDict obs_fields() {
  return TensorDict({{"pixels", values({3, 2, 2}, at::kByte)}, {"reward", values({3}, at::kFloat)}}, {3});
}
Json obs_non_tensor_fields() { return {{"label", "walk"}, {"step", 7}}; }

// What Python's reader gives for an Obs: the fields, the non-tensor ones as
// non-tensor data, and the class.
Json obs_expected(const TensorDict& fields) {
  Json expected = canonical(fields);
  const Json non_tensor_fields = obs_non_tensor_fields();
  for (const auto& [key, value] : non_tensor_fields.items()) {
    expected["entries"][key] = {{"kind", "non_tensor"}, {"value", value}};
  }
  expected["class"] = kObsType;
  return expected;
}

}  // namespace

// Every leaf a view of one storage: memmap writes the ordinary tree.
TensorDict consolidated() {
  TensorDict td({{"x", values({4, 2}, at::kFloat)}, {"n", TensorDict({{"y", values({4}, at::kShort)}}, {4})}}, {4});
  td.set_non_tensor("text", "consolidated");
  TensorDict out = td.consolidate();
  if (!out.is_consolidated()) throw std::logic_error("consolidate() gave a tensordict that is not consolidated");
  return out;
}

// Nested (jagged) leaves: values plus a .shape.memmap of sizes.
TensorDict jagged() {
  const at::Tensor ragged = at::_nested_tensor_from_tensor_list({values({3, 4}, at::kDouble), values({3, 5}, at::kDouble) + 1});
  const at::Tensor ids = at::_nested_tensor_from_tensor_list({values({2}, at::kLong), values({5}, at::kLong)});
  return TensorDict({{"ragged", ragged}, {"child", TensorDict({{"ids", ids}}, {2})}, {"dense", values({2, 3}, at::kFloat)}}, {2});
}

std::vector<WrittenCase> write_cases(const fs::path& dir) {
  std::vector<WrittenCase> out;
  auto memmap_case = [&](const std::string& name, const TensorDict& td) {
    const fs::path path = dir / name;
    td.memmap(path.string());  // a lazy stack in its layout
    out.push_back({name, "memmap", path, canonical(td)});
  };
  auto h5_case = [&](const std::string& name, const TensorDict& td) {
    const fs::path path = dir / (name + ".h5");
    td.to_h5(path.string()).close();
    out.push_back({name, "h5", path, canonical(PersistentTensorDict::from_h5(path.string()))});
  };

  memmap_case("dtypes", dtypes_td(true));
  memmap_case("nested_names", nested_names());
  memmap_case("longer_nested_batch", longer_nested_batch());
  memmap_case("zero_element", zero_element());
  memmap_case("encoded_keys", encoded_keys(true));
  memmap_case("non_tensor", non_tensor());
  memmap_case("lazy_hetero", lazy_hetero());
  memmap_case("lazy_batches", lazy_batches());
  memmap_case("dense_stack", dense_stack());
  memmap_case("consolidated", consolidated());
  memmap_case("jagged", jagged());

  const TensorDict fields = obs_fields();
  const fs::path obs_path = dir / "tensorclass";
  memmap_tensorclass(fields, obs_path.string(), {{{}, MemmapClassTag{kObsType, obs_non_tensor_fields()}}});
  out.push_back({"tensorclass", "memmap", obs_path, obs_expected(fields)});

  // An Obs inside a tensordict.
  const TensorDict outer({{"x", values({3, 2}, at::kDouble)}, {"obs", fields}}, {3});
  const fs::path outer_path = dir / "nested_tensorclass";
  memmap_tensorclass(outer, outer_path.string(), {{{"obs"}, MemmapClassTag{kObsType, obs_non_tensor_fields()}}});
  Json outer_expected = canonical(outer);
  outer_expected["entries"]["obs"] = obs_expected(fields);
  out.push_back({"nested_tensorclass", "memmap", outer_path, std::move(outer_expected)});

  h5_case("h5_dtypes", dtypes_td(false));
  TensorDict h5_nested = longer_nested_batch();
  h5_nested.update(encoded_keys(false));
  h5_nested.set("zero", TensorDict({{"w", values({2, 0}, at::kBool)}}, {2, 0}));
  h5_nested.set_non_tensor("text", "hello");
  h5_nested.set("stack", Value(NonTensorData::stack({"a", "b"}, {2})));
  h5_case("h5_nested", h5_nested);
  return out;
}

// ---- consolidated files ----------------------------------------------------------

std::vector<WrittenCase> write_consolidated_cases(const fs::path& dir) {
  std::vector<WrittenCase> out;
  auto consolidated_case = [&](const std::string& name, const TensorDict& td) {
    const fs::path path = dir / (name + ".consolidated");
    const TensorDict written = td.consolidate({.filename = path.string()});
    out.push_back({name, "consolidated", path, canonical(written)});
  };
  consolidated_case("dtypes", dtypes_td(true));
  consolidated_case("nested_names", nested_names());
  consolidated_case("longer_nested_batch", longer_nested_batch());
  consolidated_case("zero_element", zero_element());
  consolidated_case("encoded_keys", encoded_keys(true));
  consolidated_case("non_tensor", non_tensor());
  consolidated_case("lazy_hetero", lazy_hetero());
  consolidated_case("dense_stack", dense_stack());
  // A tensorclass read without its C++ type (its class in kLoadedClassKey)
  // is written back as that class.
  TensorDict obs = obs_fields();
  const Json non_tensor_fields = obs_non_tensor_fields();
  for (const auto& [key, value] : non_tensor_fields.items()) obs.set_non_tensor(key, value);
  obs.set_non_tensor(std::string(kLoadedClassKey), kObsType);
  consolidated_case("tensorclass", TensorDict({{"x", values({3, 2}, at::kDouble)}, {"obs", obs}}, {3}));
  return out;
}

}  // namespace interop
