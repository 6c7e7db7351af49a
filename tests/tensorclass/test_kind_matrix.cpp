// The kind matrix: one set of values held by every kind of tensordict (dense,
// nested, a lazy stack, a sub-view, an h5 file opened "r+", a memmap-loaded
// tree) and by a generated tensorclass. Every operation runs through each
// holder; results are compared with the per-tensor computation on the plain
// values, and in-place writes are read back where they must land (the
// members, the source, the file, the mapped files, the fields).
#include <ATen/ATen.h>
#include <tensordict/tensordict.h>
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../temp_dir.h"
#include "tc_matrix.tc.h"

using at::indexing::Slice;
using tct::matrix::Matrix;
using tensordict::NestedKey;
using tensordict::TensorDict;
using tensordict::TensorDict;

namespace {

const std::vector<int64_t> kBatch{3, 2};

// The values: float leaves a [3, 2, 5], b [3, 2, 10] and n.inner [3, 2, 2].
TensorDict reference() {
  auto values = [](std::vector<int64_t> shape, double offset) {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    return (at::arange(n, at::kFloat) * 0.25 - offset).reshape(shape);
  };
  TensorDict td({{"a", values({3, 2, 5}, 0)}, {"b", values({3, 2, 10}, 3)}}, kBatch);
  td.set({"n", "inner"}, values({3, 2, 2}, 1));
  return td;
}

// One holder of the reference values, and where its in-place writes land.
struct Kind {
  std::string name;
  std::optional<TensorDict> td;  // the dynamic kinds
  std::optional<Matrix> tc;          // the generated class
  std::function<TensorDict()> destination;
  std::shared_ptr<td_test::TempDir> dir;
};

std::vector<Kind> kinds() {
  std::vector<Kind> out;
  {
    TensorDict td = reference();
    out.push_back({"dense", td, std::nullopt, [td] { return td.to_tensordict(); }, nullptr});
  }
  {
    TensorDict parent({{"x", reference()}}, kBatch);
    out.push_back(
        {"nested", parent.get_td("x"), std::nullopt, [parent] { return parent.get_td("x").to_tensordict(); }, nullptr});
  }
  {
    std::vector<TensorDict> members;
    for (const auto& m : reference().unbind(0)) members.push_back(m.clone());
    out.push_back({"lazy", tensordict::lazy_stack(members, 0), std::nullopt,
                   [members] { return tensordict::stack(members, 0); }, nullptr});
  }
  {
    TensorDict source = tensordict::stack({reference() * 0 - 1, reference()}, 0);
    out.push_back({"sub_view", TensorDict(source.get_sub_tensordict({1})), std::nullopt,
                   [source] { return source.index({1}).to_tensordict(); }, nullptr});
  }
  {
    auto dir = std::make_shared<td_test::TempDir>();
    const std::string path = (*dir / "td.h5").string();
    tensordict::PersistentTensorDict::from_dict(reference(), path).close();
    auto file = tensordict::PersistentTensorDict::from_h5(path, "r+", kBatch);
    out.push_back(
        {"h5_r+", file, std::nullopt,
         [path] {
           return tensordict::PersistentTensorDict::from_h5(path, "r", std::vector<int64_t>(kBatch)).to_tensordict();
         },
         dir});
  }
  {
    auto dir = std::make_shared<td_test::TempDir>();
    const std::string prefix = (*dir / "td").string();
    reference().memmap(prefix);
    out.push_back({"memmap", TensorDict::load_memmap(prefix), std::nullopt,
                   [prefix] { return TensorDict::load_memmap(prefix).to_tensordict(); }, dir});
  }
  {
    auto tc = std::make_shared<Matrix>(Matrix::from_tensordict(reference()));
    out.push_back({"tensorclass", std::nullopt, *tc, nullptr, nullptr});
  }
  // The typed holder's destination is its own fields (the object in the list).
  Kind& typed = out.back();
  typed.destination = [&typed] { return typed.tc->to_tensordict(); };
  return out;
}

TensorDict dense(const TensorDict& td) { return td.contiguous(); }
TensorDict dense(const Matrix& tc) { return tc.to_tensordict(); }

// fn(holder), as a dense TensorDict, whatever the holder's type.
template <class Fn>
TensorDict on(Kind& k, Fn&& fn) {
  if (k.tc) return dense(fn(*k.tc));
  return dense(fn(*k.td));
}

// The reference's leaves mapped by `fn`, over batch `batch`.
TensorDict per_leaf(const TensorDict& ref, const std::function<at::Tensor(const at::Tensor&)>& fn,
                    std::vector<int64_t> batch) {
  TensorDict out({}, batch);
  for (const auto& key : ref.keys({.include_nested = true, .leaves_only = true})) out.set(key, fn(ref.get(key)));
  return out;
}

void require_same(const TensorDict& got, const TensorDict& expected, const std::string& what) {
  INFO(what);
  REQUIRE(got.batch_size() == expected.batch_size());
  const auto keys = expected.keys({.include_nested = true, .leaves_only = true});
  REQUIRE(got.keys({.include_nested = true, .leaves_only = true}).size() == keys.size());
  for (const auto& key : keys) {
    INFO("key " << key.repr());
    const at::Tensor g = got.get(key), e = expected.get(key);
    REQUIRE(g.scalar_type() == e.scalar_type());
    REQUIRE(g.sizes() == e.sizes());
    CHECK(at::allclose(g.to(at::kDouble), e.to(at::kDouble)));
  }
}

// An out-of-place op: run on every holder, compared with the per-leaf computation.
template <class Op>
void check_op(const std::string& name, Op&& op, const std::function<at::Tensor(const at::Tensor&)>& leaf,
              std::vector<int64_t> batch) {
  const TensorDict expected = per_leaf(reference(), leaf, batch);
  for (Kind& k : kinds()) require_same(on(k, op), expected, name + " on " + k.name);
}

// An in-place op: run on every holder, then its destination read back.
template <class Op>
void check_in_place(const std::string& name, Op&& op, const std::function<at::Tensor(const at::Tensor&)>& leaf) {
  const TensorDict expected = per_leaf(reference(), leaf, kBatch);
  auto holders = kinds();
  for (Kind& k : holders) {
    if (k.tc) {
      op(*k.tc);
    } else {
      op(*k.td);
    }
    require_same(k.destination(), expected, name + " written through " + k.name);
  }
}

at::Tensor mask() { return at::tensor(std::vector<int64_t>{1, 0, 1}).to(at::kBool); }

at::Tensor mask_leaf(const at::Tensor& t) {
  std::vector<int64_t> shape(t.dim(), 1);
  shape[0] = 3;
  return mask().reshape(shape);
}

}  // namespace

TEST_CASE("kind matrix: indexing and shape ops on every kind give the per-tensor results", "[matrix]") {
  check_op(
      "index int", [](auto& x) { return x.index({1}); }, [](const at::Tensor& t) { return t.index({1}); }, {2});
  check_op(
      "index slice", [](auto& x) { return x.index({Slice(0, 2)}); },
      [](const at::Tensor& t) { return t.index({Slice(0, 2)}); }, {2, 2});
  check_op(
      "index mask", [](auto& x) { return x.index({mask()}); }, [](const at::Tensor& t) { return t.index({mask()}); },
      {2, 2});
  check_op(
      "reshape", [](auto& x) { return x.reshape({6}); },
      [](const at::Tensor& t) {
        std::vector<int64_t> shape{6};
        shape.insert(shape.end(), t.sizes().begin() + 2, t.sizes().end());
        return t.reshape(shape);
      },
      {6});
  check_op(
      "transpose", [](auto& x) { return x.transpose(0, 1); }, [](const at::Tensor& t) { return t.transpose(0, 1); },
      {2, 3});
  check_op(
      "unsqueeze", [](auto& x) { return x.unsqueeze(1); }, [](const at::Tensor& t) { return t.unsqueeze(1); },
      {3, 1, 2});
  check_op(
      "expand",
      [](auto& x) {
        return x.expand({4, 3, 2});
      },
      [](const at::Tensor& t) {
        std::vector<int64_t> shape{4};
        shape.insert(shape.end(), t.sizes().begin(), t.sizes().end());
        return t.expand(shape);
      },
      {4, 3, 2});
  check_op(
      "unbind", [](auto& x) { return x.unbind(0)[2]; }, [](const at::Tensor& t) { return t.unbind(0)[2]; }, {2});
  check_op(
      "split", [](auto& x) { return x.split(2, 0)[1]; }, [](const at::Tensor& t) { return t.split(2, 0)[1]; }, {1, 2});
}

TEST_CASE("kind matrix: copies, math, comparisons and reductions on every kind", "[matrix]") {
  check_op(
      "clone", [](auto& x) { return x.clone(); }, [](const at::Tensor& t) { return t; }, kBatch);
  check_op(
      "apply", [](auto& x) { return x.apply([](const at::Tensor& t) { return t * 2 + 1; }); },
      [](const at::Tensor& t) { return t * 2 + 1; }, kBatch);
  check_op(
      "abs", [](auto& x) { return x.abs(); }, [](const at::Tensor& t) { return t.abs(); }, kBatch);
  check_op(
      "mul", [](auto& x) { return x * 3; }, [](const at::Tensor& t) { return t * 3; }, kBatch);
  check_op(
      "add self", [](auto& x) { return x + x; }, [](const at::Tensor& t) { return t + t; }, kBatch);
  check_op(
      "clamp", [](auto& x) { return x.clamp(-1, 1); }, [](const at::Tensor& t) { return t.clamp(-1, 1); }, kBatch);
  check_op(
      "gt", [](auto& x) { return x > 0.5; }, [](const at::Tensor& t) { return t > 0.5; }, kBatch);
  check_op(
      "sum over dim 0", [](auto& x) { return x.sum({0}); }, [](const at::Tensor& t) { return t.sum(0); }, {2});
  check_op(
      "amax over dim 1", [](auto& x) { return x.amax({1}); }, [](const at::Tensor& t) { return t.amax(1); }, {3});
  check_op(
      "sum over the feature dims (tensordict's dim='feature')", [](auto& x) { return x.sum(tensordict::feature); },
      [](const at::Tensor& t) { return t.flatten(2).sum(-1); }, kBatch);
  check_op(
      "std over the feature dims", [](auto& x) { return x.std(tensordict::feature); },
      [](const at::Tensor& t) { return t.flatten(2).std(-1); }, kBatch);
  check_op(
      "mean of everything, keepdim (every dim of size 1)", [](auto& x) { return x.mean({}, {.keepdim = true}); },
      [](const at::Tensor& t) { return t.mean(at::IntArrayRef{0, 1, 2}, true); }, {1, 1});
  check_op(
      "sum over dim 0 in float64 (dtype=)", [](auto& x) { return x.sum({0}, {.dtype = at::kDouble}); },
      [](const at::Tensor& t) { return t.to(at::kDouble).sum(0); }, {2});
  check_op(
      "masked_fill", [](auto& x) { return x.masked_fill(mask(), 7); },
      [](const at::Tensor& t) { return t.masked_fill(mask_leaf(t), 7); }, kBatch);
  check_op(
      "where", [](auto& x) { return x.where(mask(), 0); },
      [](const at::Tensor& t) { return t.where(mask_leaf(t), at::zeros_like(t)); }, kBatch);
}

TEST_CASE("kind matrix: in-place writes land in every kind's storage", "[matrix]") {
  check_in_place(
      "zero_", [](auto& x) { x.zero_(); }, [](const at::Tensor& t) { return at::zeros_like(t); });
  check_in_place(
      "mul_", [](auto& x) { x.mul_(2); }, [](const at::Tensor& t) { return t * 2; });
  check_in_place(
      "add_", [](auto& x) { x.add_(1); }, [](const at::Tensor& t) { return t + 1; });
  check_in_place(
      "masked_fill_", [](auto& x) { x.masked_fill_(mask(), -3); },
      [](const at::Tensor& t) { return t.masked_fill(mask_leaf(t), -3); });
  check_in_place(
      "index_put_", [](auto& x) { x.index_put_({1}, 5.0); },
      [](const at::Tensor& t) {
        at::Tensor out = t.clone();
        out.index_put_({1}, 5.0);
        return out;
      });
  check_in_place(
      "set_",
      [](auto& x) {
        x.set_("a", at::full({3, 2, 5}, 9.0));
      },
      [](const at::Tensor& t) {
        return t.size(-1) == 5 ? at::full({3, 2, 5}, 9.0) : t;
      });
  check_in_place(
      "update_",
      [](auto& x) {
        x.update_(TensorDict({{"b", at::ones({3, 2, 10})}}, {3, 2}));
      },
      [](const at::Tensor& t) {
        return t.size(-1) == 10 ? at::ones({3, 2, 10}) : t;
      });
}

namespace {

// A [3, 2] mask over the whole batch, and a [3, 2] index along batch dim 1.
at::Tensor batch_mask() { return at::tensor(std::vector<int64_t>{1, 0, 1, 1, 0, 1}).to(at::kBool).reshape({3, 2}); }
at::Tensor gather_index() { return at::tensor(std::vector<int64_t>{1, 0, 0, 0, 1, 1}).reshape({3, 2}); }

// `batch_shaped` ([3, 2]) viewed and expanded over the trailing dims of `leaf`.
at::Tensor over_leaf(const at::Tensor& batch_shaped, const at::Tensor& leaf) {
  std::vector<int64_t> shape = batch_shaped.sizes().vec();
  shape.resize(leaf.dim(), 1);
  std::vector<int64_t> target = batch_shaped.sizes().vec();
  target.insert(target.end(), leaf.sizes().begin() + 2, leaf.sizes().end());
  return batch_shaped.reshape(shape).expand(target);
}

}  // namespace

TEST_CASE("kind matrix: more shape ops, pairing, selection and pointwise ops on every kind", "[matrix]") {
  check_op(
      "permute",
      [](auto& x) {
        return x.permute({1, 0});
      },
      [](const at::Tensor& t) { return t.transpose(0, 1); }, {2, 3});
  check_op(
      "squeeze", [](auto& x) { return x.index({Slice(0, 1)}).squeeze(0); },
      [](const at::Tensor& t) { return t.index({Slice(0, 1)}).squeeze(0); }, {2});
  check_op(
      "flatten", [](auto& x) { return x.flatten(0, 1); }, [](const at::Tensor& t) { return t.flatten(0, 1); }, {6});
  check_op(
      "view", [](auto& x) { return x.view({6}); }, [](const at::Tensor& t) { return t.flatten(0, 1); }, {6});
  check_op(
      "unflatten",
      [](auto& x) {
        return x.flatten(0, 1).unflatten(0, {2, 3});
      },
      [](const at::Tensor& t) {
        return t.flatten(0, 1).unflatten(0, {2, 3});
      },
      {2, 3});
  check_op(
      "chunk", [](auto& x) { return x.chunk(3, 0)[1]; }, [](const at::Tensor& t) { return t.chunk(3, 0)[1]; }, {1, 2});
  check_op(
      "gather", [](auto& x) { return x.gather(1, gather_index()); },
      [](const at::Tensor& t) { return t.gather(1, over_leaf(gather_index(), t)); }, {3, 2});
  check_op(
      "masked_select", [](auto& x) { return x.masked_select(batch_mask()); },
      [](const at::Tensor& t) { return t.index({batch_mask()}); }, {4});
  check_op(
      "detach", [](auto& x) { return x.detach(); }, [](const at::Tensor& t) { return t; }, kBatch);
  check_op(
      "apply with another",
      [](auto& x) { return x.apply([](const at::Tensor& a, const at::Tensor& b) { return a - 2 * b; }, x); },
      [](const at::Tensor& t) { return t - 2 * t; }, kBatch);
  check_op(
      "where with another", [](auto& x) { return x.where(mask(), x * 2); },
      [](const at::Tensor& t) { return t.where(mask_leaf(t), t * 2); }, kBatch);
  check_op(
      "neg", [](auto& x) { return -x; }, [](const at::Tensor& t) { return -t; }, kBatch);
  check_op(
      "exp", [](auto& x) { return x.exp(); }, [](const at::Tensor& t) { return t.exp(); }, kBatch);
  check_op(
      "sub", [](auto& x) { return x - 1.5; }, [](const at::Tensor& t) { return t - 1.5; }, kBatch);
  check_op(
      "pow", [](auto& x) { return x.pow(2); }, [](const at::Tensor& t) { return t.pow(2); }, kBatch);
  check_op(
      "maximum", [](auto& x) { return x.maximum(x * 0); }, [](const at::Tensor& t) { return t.clamp_min(0); }, kBatch);
  check_op(
      "lerp", [](auto& x) { return x.lerp(x * 3, 0.5); }, [](const at::Tensor& t) { return t.lerp(t * 3, 0.5); },
      kBatch);
  check_op(
      "addcmul", [](auto& x) { return x.addcmul(x, x, 2); }, [](const at::Tensor& t) { return t.addcmul(t, t, 2); },
      kBatch);
  check_op(
      "eq self", [](auto& x) { return x == x; }, [](const at::Tensor& t) { return t == t; }, kBatch);
  check_op(
      "isfinite", [](auto& x) { return x.isfinite(); }, [](const at::Tensor& t) { return t.isfinite(); }, kBatch);
  check_op(
      "mean over dim 1", [](auto& x) { return x.mean({1}); }, [](const at::Tensor& t) { return t.mean(1); }, {3});
  check_op(
      "max over dim 0 (values)", [](auto& x) { return std::get<0>(x.max(0)); },
      [](const at::Tensor& t) { return std::get<0>(t.max(0)); }, {2});
  check_op(
      "max over dim 0 (indices)", [](auto& x) { return std::get<1>(x.max(0)); },
      [](const at::Tensor& t) { return std::get<1>(t.max(0)); }, {2});
  // select / exclude keep the chosen fields only.
  const TensorDict ref = reference();
  for (Kind& k : kinds()) {
    require_same(on(k,
                    [](auto& x) {
                      return x.select({"a", NestedKey({"n", "inner"})});
                    }),
                 ref.select({"a", NestedKey({"n", "inner"})}).to_tensordict(), "select on " + k.name);
    require_same(on(k, [](auto& x) { return x.exclude({"a"}); }), ref.exclude({"a"}).to_tensordict(),
                 "exclude on " + k.name);
  }
}

TEST_CASE("kind matrix: more in-place writes land in every kind's storage", "[matrix]") {
  check_in_place(
      "fill_", [](auto& x) { x.fill_(2.5); }, [](const at::Tensor& t) { return at::full_like(t, 2.5); });
  check_in_place(
      "apply_", [](auto& x) { x.apply_([](const at::Tensor& t) { return t * 4 - 1; }); },
      [](const at::Tensor& t) { return t * 4 - 1; });
  check_in_place(
      "div_", [](auto& x) { x.div_(4); }, [](const at::Tensor& t) { return t / 4; });
  check_in_place(
      "sub_", [](auto& x) { x.sub_(0.5); }, [](const at::Tensor& t) { return t - 0.5; });
  check_in_place(
      "neg_", [](auto& x) { x.neg_(); }, [](const at::Tensor& t) { return -t; });
  check_in_place(
      "clamp_", [](auto& x) { x.clamp_(-1, 1); }, [](const at::Tensor& t) { return t.clamp(-1, 1); });
  check_in_place(
      "lerp_", [](auto& x) { x.lerp_(at::ones({}), 0.25); },
      [](const at::Tensor& t) { return t.lerp(at::ones_like(t), 0.25); });
  check_in_place(
      "addcdiv_", [](auto& x) { x.addcdiv_(x, x.abs() + 1, 0.5); },
      [](const at::Tensor& t) { return t.addcdiv(t, t.abs() + 1, 0.5); });
  check_in_place(
      "index_put_ with a tensor", [](auto& x) { x.index_put_({Slice(0, 2)}, at::scalar_tensor(-4.0)); },
      [](const at::Tensor& t) {
        at::Tensor out = t.clone();
        out.index_put_({Slice(0, 2)}, -4.0);
        return out;
      });
}

namespace {

// stack / cat of a holder with itself: the free functions for tensordicts,
// the static ones for the class.
TensorDict stacked(const TensorDict& x) { return tensordict::stack({x, x}, 1); }
Matrix stacked(const Matrix& x) { return Matrix::stack({x, x}, 1); }
TensorDict concatenated(const TensorDict& x) { return tensordict::cat({x, x}, 0); }
Matrix concatenated(const Matrix& x) { return Matrix::cat({x, x}, 0); }

// A fresh directory per call, for round trips through files.
std::string fresh_path(const std::string& name) {
  static td_test::TempDir dir;
  static int calls = 0;
  return (dir / (name + std::to_string(++calls))).string();
}

}  // namespace

TEST_CASE("kind matrix: combining, copies, files and the rest of the pointwise surface on every kind", "[matrix]") {
  const at::Tensor rows = at::tensor(std::vector<int64_t>{2, 0});
  check_op(
      "index long", [&](auto& x) { return x.index({rows}); }, [&](const at::Tensor& t) { return t.index({rows}); },
      {2, 2});
  check_op(
      "stack", [](auto& x) { return stacked(x); },
      [](const at::Tensor& t) {
        return at::stack({t, t}, 1);
      },
      {3, 2, 2});
  check_op(
      "cat", [](auto& x) { return concatenated(x); },
      [](const at::Tensor& t) {
        return at::cat({t, t}, 0);
      },
      {6, 2});
  check_op(
      "split with sizes",
      [](auto& x) {
        return x.split(std::vector<int64_t>{1, 2}, 0)[1];
      },
      [](const at::Tensor& t) {
        return t.split_with_sizes({1, 2}, 0)[1];
      },
      {2, 2});
  check_op(
      "squeeze every size-1 dim", [](auto& x) { return x.unsqueeze(0).unsqueeze(2).squeeze(); },
      [](const at::Tensor& t) { return t; }, kBatch);
  check_op(
      "contiguous", [](auto& x) { return x.transpose(0, 1).contiguous(); },
      [](const at::Tensor& t) { return t.transpose(0, 1).contiguous(); }, {2, 3});
  check_op(
      "cpu", [](auto& x) { return x.cpu(); }, [](const at::Tensor& t) { return t; }, kBatch);
  check_op(
      "consolidate", [](auto& x) { return x.consolidate(); }, [](const at::Tensor& t) { return t; }, kBatch);
  check_op(
      "memmap to a new directory",
      [](auto& x) { return x.memmap(fresh_path("memmap"), tensordict::MemmapOptions{.copy_existing = true}); },
      [](const at::Tensor& t) { return t; }, kBatch);
  check_op(
      "to_h5", [](auto& x) { return x.to_h5(fresh_path("h5") + ".h5").to_tensordict(); },
      [](const at::Tensor& t) { return t; }, kBatch);
  check_op(
      "add with alpha", [](auto& x) { return x.add(x, 2); }, [](const at::Tensor& t) { return t + 2 * t; }, kBatch);
  check_op(
      "div by another", [](auto& x) { return x / (x.abs() + 1); },
      [](const at::Tensor& t) { return t / (t.abs() + 1); }, kBatch);
  check_op(
      "clamp_min", [](auto& x) { return x.clamp_min(0.5); }, [](const at::Tensor& t) { return t.clamp_min(0.5); },
      kBatch);
  check_op(
      "sqrt of abs", [](auto& x) { return x.abs().sqrt(); }, [](const at::Tensor& t) { return t.abs().sqrt(); },
      kBatch);
  check_op(
      "ne", [](auto& x) { return x != x * 2; }, [](const at::Tensor& t) { return t != t * 2; }, kBatch);
  check_op(
      "le", [](auto& x) { return x <= 1; }, [](const at::Tensor& t) { return t <= 1; }, kBatch);
  check_op(
      "isnan", [](auto& x) { return x.isnan(); }, [](const at::Tensor& t) { return t.isnan(); }, kBatch);
  check_op(
      "sum of everything (tensordict's sum() with no dim)", [](auto& x) { return x.sum(); },
      [](const at::Tensor& t) { return t.sum(); }, {});
  check_op(
      "prod over dim 0", [](auto& x) { return x.prod({0}); }, [](const at::Tensor& t) { return t.prod(0); }, {2});
  check_op(
      "min over dim 1 (values)", [](auto& x) { return std::get<0>(x.min(1)); },
      [](const at::Tensor& t) { return std::get<0>(t.min(1)); }, {3});
}

TEST_CASE("kind matrix: writes of a same-kind value land in every kind's storage", "[matrix]") {
  check_in_place(
      "index_put_ with a value of the same kind",
      [](auto& x) { x.index_put_({Slice(0, 1)}, x.index({Slice(2, 3)}) * 10); },
      [](const at::Tensor& t) {
        at::Tensor out = t.clone();
        out.index_put_({Slice(0, 1)}, t.index({Slice(2, 3)}) * 10);
        return out;
      });
  check_in_place(
      "update_at_ with a value of the same kind",
      [](auto& x) { x.update_at_(x.index({Slice(2, 3)}) * 10, {Slice(0, 1)}); },
      [](const at::Tensor& t) {
        at::Tensor out = t.clone();
        out.index_put_({Slice(0, 1)}, t.index({Slice(2, 3)}) * 10);
        return out;
      });
  check_in_place(
      "update_ with a value of the same kind", [](auto& x) { x.update_(x * 0 + 3); },
      [](const at::Tensor& t) { return at::full_like(t, 3); });
}

TEST_CASE("kind matrix: names and locks on every kind", "[matrix]") {
  using tensordict::Names;
  const Names xy{"x", "y"};
  for (Kind& k : kinds()) {
    INFO(k.name);
    auto check_names = [&](auto& x) {
      x.rename_(xy);
      CHECK((x.names() == xy));
      CHECK((x.index({1}).names() == Names{"y"}));
      CHECK((x.index({Slice(0, 2)}).names() == xy));
      CHECK((x.transpose(0, 1).names() == Names{"y", "x"}));
      CHECK((x.unsqueeze(1).names() == Names{"x", std::nullopt, "y"}));
      CHECK((x.unbind(0)[0].names() == Names{"y"}));
      CHECK((x.clone().names() == xy));
      // A cast the schema allows keeps them on every holder; a tensorclass
      // refuses a cast its schema's dtypes forbid.
      CHECK((x.to(at::kFloat).names() == xy));
      if constexpr (std::is_base_of_v<TensorDict, std::decay_t<decltype(x)>>) {
        CHECK((x.to(at::kDouble).names() == xy));
      }
      CHECK(((x + 1).names() == xy));
      CHECK((x.reshape({6}).names() == Names{std::nullopt}));
      // refine_names names the unnamed dims and checks the named ones.
      x.rename_(Names{"x", std::nullopt});
      x.refine_names({"...", "y"});
      CHECK((x.names() == xy));
      REQUIRE_THROWS_WITH(x.refine_names({"z", "..."}),
                          "refine_names: dim 0 is named 'x' and cannot be refined to 'z'");
      CHECK((x.names() == xy));
      // A name on two dims: tensordict's ValueError (test_nameddims.py::test_error_similar),
      // the names left as they were.
      REQUIRE_THROWS_AS(x.rename_(Names{"y", "y"}), tensordict::ValueError);
      REQUIRE_THROWS_WITH(x.rename_(Names{"y", "y"}), "Some dimension names are non-unique: ['y', 'y'].");
      CHECK((x.names() == xy));
      x.rename_(Names{});
      REQUIRE_THROWS_WITH(x.refine_names({"x", "x"}), "Some dimension names are non-unique: ['x', 'x'].");
      CHECK_FALSE(x.has_names());
      x.rename_(xy);
    };
    auto check = [&](auto& x) {
      // Names follow the batch dims through indexing, shape ops, copies,
      // casts and math (tensordict's rules). A sub-view's names are its
      // source's: naming it alone is refused.
      if (k.name == "sub_view") {
        REQUIRE_THROWS_WITH(x.rename_(xy), Catch::Contains("names follow its source and index"));
      } else {
        check_names(x);
      }

      // A sub-view shares its source's lock and cannot be locked alone
      // (tensordict's _SubTensorDict.lock_).
      if (k.name == "sub_view") {
        REQUIRE_THROWS_WITH(x.lock_(), Catch::Contains("Cannot lock a"));
        return;
      }
      // Shape ops keep the lock; copies are unlocked (tensordict's _td.py).
      x.lock_();
      CHECK(x.is_locked());
      CHECK(x.reshape({6}).is_locked());
      CHECK(x.transpose(0, 1).is_locked());
      CHECK_FALSE(x.clone().is_locked());
      // to() keeps the lock, but for an h5 file's dense copy (tensordict
      // 0.15.3: a PersistentTensorDict's to() is unlocked).
      CHECK(x.to(at::kFloat).is_locked() == (k.name != "h5_r+"));
      CHECK(x.to(at::Device(at::kCPU)).is_locked() == (k.name != "h5_r+"));
      if constexpr (std::is_base_of_v<TensorDict, std::decay_t<decltype(x)>>) {
        REQUIRE_THROWS_WITH(x.set("new", at::zeros({3, 2})), Catch::Contains("Cannot modify locked TensorDict"));
        x.set_("a", x.get("a") * 0 + 1);  // set_ stays allowed
        CHECK(at::equal(k.destination().get("a"), at::ones({3, 2, 5})));
      }
      x.unlock_();
      CHECK_FALSE(x.is_locked());
    };
    if (k.tc) {
      check(*k.tc);
    } else {
      check(*k.td);
    }
  }
}
