// Field names are the schema's, whatever TensorClass calls its members
// (schemas/tc_names.yaml): a field named like a TensorClass method hides the
// method in the struct and the method stays callable through
// tensordict::methods(obj); TensorClass's own code never reaches a member
// through the struct, so every op works whatever the fields are named. C++
// keywords, `Fields` and the class's own name take a trailing '_' in C++
// only: the key on disk is the schema's name.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <catch2/catch.hpp>
#include <tensordict/tensordict.h>

#include <filesystem>
#include <set>
#include <string>
#include <type_traits>

#include "../builders.h"
#include "../message_of.h"
#include "../temp_dir.h"
#include "tc_names.tc.h"

using tct::names::Inner;
using tct::names::PolicyOutput;
using tct::names::Shaped;
using td_test::iota;
using td_test::message_of;
using tensordict::methods;
namespace fs = std::filesystem;

namespace {

Inner inner(int64_t n) {
  return Inner({.index = iota({n}, at::kLong), .validate = iota({n, 2}) + 1, .tc_names_ = iota({n}) + 2}, {n});
}

PolicyOutput policy(int64_t n = 4) {
  return PolicyOutput({.index = iota({n}, at::kLong) * 10,
                       .mean = iota({n, 3}),
                       .max = iota({n, 3}) + 100,
                       .names = iota({n}) + 1,
                       .keys = iota({n}) + 4,
                       ._private = iota({n}) + 5,
                       .class_ = iota({n}, at::kLong) + 6,
                       .lambda = 1.5,
                       .from = "there",
                       .int_ = 7,
                       .Inner = inner(n),
                       .validate = iota({n}) + 8,
                       .schema = iota({n}) + 9,
                       .to = iota({n}) + 10,
                       .clone = iota({n}) + 11,
                       .tc_batch_size_ = iota({n}) + 12,
                       .init_ = iota({n}) + 13,
                       .shell_ = iota({n}) + 14},
                      {n});
}

}  // namespace

TEST_CASE("fields named like TensorClass members are the fields, and the members stay callable through methods()",
          "[tensorclass][names]") {
  PolicyOutput p = policy();
  // The fields, by their schema names.
  CHECK(at::equal(p.index, iota({4}, at::kLong) * 10));
  CHECK(at::equal(p.mean, iota({4, 3})));
  CHECK(at::equal(p.keys, iota({4}) + 4));
  CHECK(at::equal(p._private, iota({4}) + 5));
  static_assert(std::is_same_v<decltype(p.index), at::Tensor>);
  // The methods those fields hide.
  const PolicyOutput first = methods(p).index({0});
  CHECK(at::equal(first.mean, iota({3})));
  CHECK(methods(p).batch_size() == at::IntArrayRef({4}));
  CHECK_FALSE(methods(p).has_names());
  CHECK((methods(p).names() == tensordict::Names{std::nullopt} ? true : false));
  CHECK_FALSE(methods(p).device().has_value());
  CHECK(methods(p).sum({0}).get("mean").allclose(p.mean.sum(0)));  // a reduction over the batch dim
  CHECK(std::get<0>(methods(p).max(0)).get("max").equal(iota({3}) + 109));
  CHECK(methods(p).abs().keys.equal(p.keys));  // the field `log` hides the op log() as well
  methods(p).validate();
  CHECK(PolicyOutput::fields().size() == 26);
  CHECK(tensordict::TensorClass<PolicyOutput>::schema().name == "PolicyOutput");
  // Methods return the struct, whose hidden members take methods() again.
  CHECK(methods(methods(p).clone()).to(at::Device(at::kCPU)).index.equal(p.index));
  // The qualified spelling names the same member.
  CHECK(p.TensorClass::index({1}).index.item<int64_t>() == 10);
  // Members no field hides are called directly.
  CHECK(p.numel() == 4);
  CHECK(p.reshape({2, 2}).mean.sizes() == at::IntArrayRef({2, 2, 3}));
}

TEST_CASE("C++ keywords, Fields and the class's own name take a trailing '_' in C++ only", "[tensorclass][names]") {
  PolicyOutput p = policy();
  CHECK(at::equal(p.class_, iota({4}, at::kLong) + 6));
  CHECK(p.int_ == 7);
  CHECK(p.PolicyOutput_ == "self");
  CHECK_FALSE(p.Fields_.defined());  // optional, unset
  CHECK(p.lambda == 1.5);            // Python keywords are C++ names
  CHECK(p.from == "there");
  CHECK(p.str == 4);
  CHECK(p.errno_ == 5);
  std::set<std::string> names;
  for (const auto& f : PolicyOutput::fields()) names.insert(std::string(f.name));
  for (const char* name : {"class", "int", "Fields", "PolicyOutput", "errno", "lambda", "_private", "index"})
    CHECK(names.count(name) == 1);
  CHECK(names.count("class_") == 0);
  // Fields by name, as on disk.
  CHECK(at::equal(methods(p).get("class"), p.class_));
  CHECK(at::equal(methods(p).get({"Inner", "index"}), p.Inner.index));
  methods(p).set("class", iota({4}, at::kLong));
  CHECK(at::equal(p.class_, iota({4}, at::kLong)));
  const auto td = methods(p).to_tensordict();
  CHECK(td.contains("class"));
  CHECK(td.contains("_private"));
  CHECK_FALSE(td.contains("class_"));
}

TEST_CASE("every op runs whatever the fields are named, private members' names included", "[tensorclass][names]") {
  PolicyOutput p = policy();
  p.sub = inner(4);
  // Fields named like TensorClass's private members (tc_batch_size_, init_,
  // shell_, tc_names_ in the nested class) are plain data.
  CHECK(at::equal(p.tc_batch_size_, iota({4}) + 12));
  CHECK(p.tc_locked_);
  CHECK(p.saved_path_ == "nowhere");
  CHECK_FALSE(methods(p).is_locked());
  const auto parts = p.unbind(0);
  REQUIRE(parts.size() == 4);
  CHECK(parts[2].class_.item<int64_t>() == 8);
  CHECK(parts[2].Inner.validate.equal(iota({4, 2})[2] + 1));
  const PolicyOutput s = PolicyOutput::stack({parts[0], parts[1]}, 0);
  CHECK(methods(s).batch_size() == at::IntArrayRef({2}));
  CHECK(s.sub.has_value());
  const PolicyOutput c = PolicyOutput::cat({p, p});
  CHECK(c.tc_batch_size_.size(0) == 8);
  CHECK(methods(c).sizes() == at::IntArrayRef({8}));
  const PolicyOutput doubled = p.apply([](const at::Tensor& t) { return t * 2; });
  CHECK(doubled.init_.equal((iota({4}) + 13) * 2));
  CHECK(doubled.saved_path_ == "nowhere");
  const PolicyOutput e = p.unsqueeze(0).expand({2, 4});
  CHECK(e.shell_.sizes() == at::IntArrayRef({2, 4}));
  CHECK_FALSE(methods(e).has_names());
  methods(p).lock_();
  CHECK(methods(p).is_locked());
  CHECK(message_of([&] { methods(p).set("keys", iota({4})); }).find("(PolicyOutput.keys)") != std::string::npos);
  methods(p).unlock_();
  methods(p).zero_();
  CHECK(p.index.sum().item<int64_t>() == 0);
  CHECK(methods(p).repr().find("class: ") != std::string::npos);
  // A broken field is reported by its schema name.
  PolicyOutput bad = policy();
  bad.class_ = iota({3}, at::kLong);
  CHECK(message_of([&] { methods(bad).validate(); }) ==
        "PolicyOutput.class: shape [3] does not start with the batch size [4]");
}

TEST_CASE("memmap keys are the schema's names", "[tensorclass][names]") {
  td_test::TempDir dir;
  PolicyOutput p = policy();
  const PolicyOutput saved = methods(p).memmap((dir / "p").string());
  CHECK(methods(saved).is_memmap());
  CHECK(fs::exists(dir / "p" / "_tensordict" / "class.memmap"));
  CHECK(fs::exists(dir / "p" / "_tensordict" / "_private.memmap"));
  CHECK(fs::exists(dir / "p" / "_tensordict" / "index.memmap"));
  CHECK(fs::exists(dir / "p" / "_tensordict" / "Inner"));
  CHECK_FALSE(fs::exists(dir / "p" / "_tensordict" / "class_.memmap"));
  const PolicyOutput back = PolicyOutput::load_memmap((dir / "p").string());
  CHECK(at::equal(back.class_, p.class_));
  CHECK(at::equal(back.index, p.index));
  CHECK(back.from == "there");
  CHECK(back.int_ == 7);
  CHECK(at::equal(back.Inner.tc_names_, p.Inner.tc_names_));
  // The dynamic core reads the same keys.
  const auto td = tensordict::TensorDict::load_memmap((dir / "p").string());
  CHECK(td.contains("class"));
}

TEST_CASE("fields named shape and device work in memory, and memmap refuses them (meta.json keeps the level's own there)",
          "[tensorclass][names]") {
  Shaped s({.shape = iota({3, 2}), .device = iota({3}) + 1, .index = iota({3}, at::kLong)}, {3});
  CHECK(s.shape.sizes() == at::IntArrayRef({3, 2}));
  CHECK(at::equal(s.device, iota({3}) + 1));
  CHECK(methods(s).batch_size() == at::IntArrayRef({3}));
  CHECK_FALSE(methods(s).device().has_value());
  const Shaped t = methods(s).index({at::indexing::Slice(0, 2)});
  CHECK(at::equal(t.index, iota({2}, at::kLong)));
  td_test::TempDir dir;
  CHECK(message_of([&] { methods(s).memmap((dir / "s").string()); }).find("'shape' is reserved in meta.json") !=
        std::string::npos);
}
