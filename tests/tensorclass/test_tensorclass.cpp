// Generated tensorclasses (schemas/tc_*.yaml and the ready-made schemas/):
// every typed op is compared with the same op applied to the member tensors by
// hand.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <catch2/catch.hpp>
#include <tensordict/tensordict.h>

#include <chrono>
#include <sstream>

#include "../builders.h"
#include "../message_of.h"
#include "rl.tc.h"
#include "sequence.tc.h"
#include "tc_obs.tc.h"
#include "vision.tc.h"

using namespace at::indexing;
using tct::Named;
using tct::Observation;
using tct::common::Agent;
using td_test::message_of;
using tensordict::set_printoptions;
using tensordict::SortKeys;

namespace {

using td_test::iota;
using td_test::same;

std::vector<int64_t> join(at::IntArrayRef a, at::IntArrayRef b) {
  std::vector<int64_t> out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// An Observation over `batch` with H=4, W=5 and every field set.
Observation make_obs(at::IntArrayRef batch, bool with_depth = true) {
  Observation::Fields f;
  f.pixels = iota(join(batch, {3, 4, 5}), at::kByte);
  if (with_depth) f.depth = iota(join(batch, {4, 5}));
  f.reward = iota(batch) + 0.5;
  f.agent = Agent({.pos = iota(join(batch, {2})), .vel = -iota(join(batch, {2}))}, batch.vec());
  return Observation(std::move(f), batch.vec());
}

// Checks every tensor member of `got` against fn(member of `src`).
template <class Fn>
void check_members(const Observation& got, const Observation& src, Fn fn) {
  CHECK(same(got.pixels, fn(src.pixels)));
  if (src.depth.defined()) CHECK(same(got.depth, fn(src.depth)));
  CHECK(same(got.reward, fn(src.reward)));
  CHECK(same(got.agent.pos, fn(src.agent.pos)));
  CHECK(same(got.agent.vel, fn(src.agent.vel)));
  CHECK(got.task == src.task);
  CHECK(got.tags == src.tags);
}

}  // namespace

// ---- static description ----------------------------------------------------------
static_assert(Observation::schema().name == "Observation");
static_assert(Observation::num_fields() == 7);
static_assert(Observation::fields()[0].name == "pixels");
static_assert(Observation::fields()[0].dtype == "uint8");
static_assert(Observation::fields()[0].shape[1].size == 3);
static_assert(Observation::fields()[0].shape[2].symbol == "H");
static_assert(Observation::fields()[3].kind == tensordict::schema::FieldKind::TensorClass);
static_assert(Observation::fields()[4].kind == tensordict::schema::FieldKind::NonTensor);
static_assert(tensordict::is_tensorclass_v<Agent> && !tensordict::is_tensorclass_v<at::Tensor>);

TEST_CASE("schema is available at run time") {
  const auto& info = Observation::schema();
  CHECK(info.cpp_name == "tct::Observation");
  CHECK(info.doc == "One environment step.");
  CHECK(info.fields[1].optional);
  CHECK(info.fields[0].doc == "RGB frame");
  CHECK(info.fields[4].default_value == "walk");
  CHECK(Named::schema().fixed_batch_dims);
  CHECK(Named::schema().batch_names.size() == 2);
}

// ---- construction & validation ---------------------------------------------------------
TEST_CASE("construction: fields, batch size, defaults, optional") {
  auto o = make_obs({2, 3}, /*with_depth=*/false);
  CHECK(o.batch_size() == at::IntArrayRef({2, 3}));
  CHECK(o.batch_dims() == 2);
  CHECK(o.numel() == 6);
  CHECK(o.len() == 2);
  CHECK(!o.device().has_value());
  CHECK(!o.depth.defined());
  CHECK(o.task == "walk");
  CHECK(o.tags == std::vector<std::string>{"a", "b"});
  CHECK(o.scale == 1.0);
  CHECK(o.agent.batch_size() == at::IntArrayRef({2, 3}));

  auto on_cpu = Observation({.pixels = iota({2, 3, 4, 5}, at::kByte), .reward = iota({2}),
                             .agent = Agent({.pos = iota({2, 2}), .vel = iota({2, 2})}, {2})},
                            {2}, at::Device(at::kCPU));
  CHECK(on_cpu.device() == at::Device(at::kCPU));
  CHECK(on_cpu.agent.device() == at::Device(at::kCPU));

  // A nested member without a batch size takes the parent's.
  Observation::Fields f;
  f.pixels = iota({2, 3, 4, 5}, at::kByte);
  f.reward = iota({2});
  f.agent.pos = iota({2, 2});
  f.agent.vel = iota({2, 2});
  auto adopted = Observation(std::move(f), {2});
  CHECK(adopted.agent.batch_size() == at::IntArrayRef({2}));
}

TEST_CASE("validation errors name the class, field and dim") {
  const auto agent = Agent({.pos = iota({2, 2}), .vel = iota({2, 2})}, {2});
  auto build = [&](at::Tensor pixels, at::Tensor depth, at::Tensor reward) {
    return Observation({.pixels = pixels, .depth = depth, .reward = reward, .agent = agent}, {2});
  };
  const auto px = iota({2, 3, 4, 5}, at::kByte);
  CHECK(message_of([&] { build(iota({2, 3, 4, 5}), {}, iota({2})); }) ==
        "Observation.pixels: dtype must be uint8 (got float32)");
  CHECK(message_of([&] { build(iota({2, 4, 4, 5}, at::kByte), {}, iota({2})); }) ==
        "Observation.pixels: dim 1 must be 3 (got 4)");
  CHECK(message_of([&] { build(px, iota({2, 4, 6}), iota({2})); }) ==
        "Observation.depth: symbolic dim W is 5 in pixels but 6 in depth (dim 2)");
  CHECK(message_of([&] { build(px, {}, iota({3})); }) ==
        "Observation.reward: shape [3] does not start with the batch size [2]");
  CHECK(message_of([&] { build(px, {}, iota({2, 1})); }) ==
        "Observation.reward: expected 1 dims (1 batch + 0 declared) but got shape [2, 1]");
  CHECK(message_of([&] { build(px, {}, {}); }) == "Observation.reward: required field is not set");
  CHECK(message_of([&] {
          Observation({.pixels = px, .reward = iota({2}), .agent = Agent({.pos = iota({2, 3}), .vel = iota({2, 2})}, {2})}, {2});
        }) == "Agent.pos: dim 1 must be 2 (got 3)");
  CHECK(message_of([&] {
          Observation({.pixels = px, .reward = iota({2}), .agent = Agent({.pos = iota({3, 2}), .vel = iota({3, 2})}, {3})}, {2});
        }) == "Observation.agent: batch size [3] does not start with the parent's batch size [2]");
  CHECK(message_of([&] { Named({.x = iota({2, 2}), .free = iota({2})}, {2}); }) ==
        "Named: batch size [2] must have 2 dims (env, time)");
  CHECK(message_of([&] { build(px, {}, at::_nested_tensor_from_tensor_list({iota({1}), iota({2})})); }) ==
        "Observation.reward: a nested (jagged) tensor cannot be a tensorclass field; pad it "
        "(at::nested_to_padded_tensor) or keep it in a TensorDict");
  // A broken contract is a ValueError (std::invalid_argument), as the Python
  // class generated from the same schema raises in __post_init__: dtype,
  // fixed dim, symbolic dim, number of declared dims, number of batch dims.
  CHECK_THROWS_AS(build(iota({2, 3, 4, 5}), {}, iota({2})), tensordict::ValueError);
  CHECK_THROWS_AS(build(iota({2, 4, 4, 5}, at::kByte), {}, iota({2})), tensordict::ValueError);
  CHECK_THROWS_AS(build(px, iota({2, 4, 6}), iota({2})), tensordict::ValueError);
  CHECK_THROWS_AS(build(px, {}, iota({2, 1})), tensordict::ValueError);
  CHECK_THROWS_AS(Named({.x = iota({2, 2}), .free = iota({2})}, {2}), tensordict::ValueError);
  CHECK_THROWS_AS(build(iota({2, 4, 4, 5}, at::kByte), {}, iota({2})), std::invalid_argument);
  // A leaf or nested class off the batch size: tensordict's RuntimeError,
  // raised before __post_init__ runs.
  CHECK_THROWS_AS(build(px, {}, iota({3})), tensordict::RuntimeError);
  CHECK_THROWS_AS(
      Observation({.pixels = px, .reward = iota({2}), .agent = Agent({.pos = iota({3, 2}), .vel = iota({3, 2})}, {3})}, {2}),
      tensordict::RuntimeError);
}

TEST_CASE("a nested member is validated once: when built, or by the parent if it never was") {
  const auto px = iota({2, 3, 4, 5}, at::kByte);
  // Never validated (default-constructed, then given a bad field): the parent
  // checks it in full, naming its path.
  Agent unchecked;
  unchecked.pos = iota({2, 3});
  unchecked.vel = iota({2, 2});
  CHECK(message_of([&] { Observation({.pixels = px, .reward = iota({2}), .agent = unchecked}, {2}); }) ==
        "Agent.pos: dim 1 must be 2 (got 3)");
  // Built by its constructor: the parent accepts it; a later write to its
  // public members is caught by validate(), with the full path.
  Observation obs({.pixels = px, .reward = iota({2}), .agent = Agent({.pos = iota({2, 2}), .vel = iota({2, 2})}, {2})}, {2});
  obs.agent.vel = iota({2, 5});
  CHECK(message_of([&] { obs.validate(); }) == "Observation.agent.vel: dim 1 must be 2 (got 5)");
}

TEST_CASE("names: declared batch names, rename_, shape ops") {
  Named n({.x = iota({2, 3, 2}), .free = iota({2, 3, 7})}, {2, 3});
  CHECK((n.names() == tensordict::Names{"env", "time"}));
  auto t = n.transpose(0, 1);
  CHECK((t.names() == tensordict::Names{"time", "env"}));
  CHECK((n.unsqueeze(0).names() == tensordict::Names{std::nullopt, "env", "time"}));
  CHECK((n.clone().names() == n.names()));
  n.rename_({"a", std::nullopt});
  CHECK((n.names() == tensordict::Names{"a", std::nullopt}));
  CHECK_THROWS(n.rename_({"a"}));
  auto o = make_obs({2});
  CHECK(!o.has_names());
  CHECK((o.names() == tensordict::Names{std::nullopt}));
}

TEST_CASE("names follow every shape op as on the dynamic TensorDict") {
  Named n({.x = iota({2, 3, 2}), .free = iota({2, 3, 7})}, {2, 3});
  const tensordict::TensorDict td = n.to_tensordict();
  CHECK((n.index({1}).names() == td.index({1}).names()));
  CHECK((n.index({Slice(), at::tensor({2, 0}, at::kLong)}).names() == td.index({Slice(), at::tensor({2, 0}, at::kLong)}).names()));
  CHECK((n.index({None}).names() == tensordict::Names{std::nullopt, "env", "time"}));
  CHECK((n.expand({4, 2, 3}).names() == td.expand({4, 2, 3}).names()));
  CHECK((n.flatten(0, 1).names() == td.flatten(0, 1).names()));
  CHECK((n.unflatten(1, {3, 1}).names() == td.unflatten(1, {3, 1}).names()));
  CHECK((n.unbind(0)[1].names() == td.unbind(0)[1].names()));
  CHECK((n.unbind(0)[1].names() == tensordict::Names{"time"}));
  CHECK((n.split(1, 1)[2].names() == td.split(1, 1)[2].names()));
  CHECK((n.chunk(2, 0)[0].names() == n.names()));
  CHECK(!n.reshape({6}).has_names());
  CHECK((n.reshape({6}).names() == td.reshape({6}).names()));
}

TEST_CASE("lock_: set refuses with tensordict's message") {
  auto o = make_obs({2});
  o.lock_();
  CHECK(o.is_locked());
  CHECK_THAT(message_of([&] { o.set("reward", iota({2})); }),
             Catch::StartsWith("Cannot modify locked TensorDict. For in-place modification"));
  o.unlock_();
  CHECK(!o.is_locked());
  o.set("reward", at::zeros({2}));
  CHECK(same(o.reward, at::zeros({2})));
}

// tensordict's lock_ reaches nested levels (test_tensorclass.py's
// locked-nested cases): so does a tensorclass's, to its nested members.
TEST_CASE("lock_ reaches nested tensorclass members, unlock_ of the root releases them") {
  auto o = make_obs({2});
  o.lock_();
  CHECK(o.agent.is_locked());
  CHECK_THAT(message_of([&] { o.set({"agent", "pos"}, iota({2, 2})); }),
             Catch::StartsWith("Cannot modify locked TensorDict."));
  CHECK_THAT(message_of([&] { o.agent.set("pos", iota({2, 2})); }), Catch::StartsWith("Cannot modify locked TensorDict."));
  o.unlock_();
  CHECK(!o.agent.is_locked());
  o.agent.set("pos", iota({2, 2}));
  CHECK(same(o.agent.pos, iota({2, 2})));
}

// ---- get / set by name ------------------------------------------------------------
TEST_CASE("get and set by name and nested path") {
  auto o = make_obs({2});
  CHECK(same(o.get("pixels"), o.pixels));
  CHECK(same(o.get({"agent", "pos"}), o.agent.pos));
  CHECK(o.contains({"agent", "vel"}));
  CHECK(!o.contains("nope"));
  o.set({"agent", "vel"}, at::ones({2, 2}));
  CHECK(same(o.agent.vel, at::ones({2, 2})));
  CHECK_THROWS_AS(o.get("nope"), tensordict::KeyError);
  CHECK_THROWS_AS(o.get("task"), std::invalid_argument);
  CHECK(message_of([&] { o.set("pixels", iota({2, 3, 4, 5})); }) == "Observation.pixels: dtype must be uint8 (got float32)");
  CHECK(o.pixels.scalar_type() == at::kByte);  // unchanged after a refused set
  CHECK(message_of([&] { o.set({"agent", "pos"}, at::ones({2, 3})); }) == "Agent.pos: dim 1 must be 2 (got 3)");
}

// ---- indexing ------------------------------------------------------------------------
TEST_CASE("index returns the typed class") {
  const auto o = make_obs({4, 3});
  SECTION("int") {
    Observation r = o.index({1});
    CHECK(r.batch_size() == at::IntArrayRef({3}));
    CHECK(r.agent.batch_size() == at::IntArrayRef({3}));
    check_members(r, o, [](const at::Tensor& t) { return t.index({1}); });
  }
  SECTION("ellipsis, slice") {
    auto r = o.index({Ellipsis, Slice(0, 2)});
    CHECK(r.batch_size() == at::IntArrayRef({4, 2}));
    check_members(r, o, [](const at::Tensor& t) { return t.index({Slice(), Slice(0, 2)}); });
  }
  SECTION("bool mask") {
    auto mask = at::tensor(std::vector<int64_t>{1, 0, 1, 1}).to(at::kBool);
    auto r = o.index({mask});
    CHECK(r.batch_size() == at::IntArrayRef({3, 3}));
    check_members(r, o, [&](const at::Tensor& t) { return t.index({mask}); });
  }
  SECTION("out of range") { CHECK_THROWS_AS(o.index({7}), std::out_of_range); }
}

TEST_CASE("index_put_ with an instance, a tensor and a scalar") {
  auto o = make_obs({4});
  auto src = make_obs({2}).clone();
  src.zero_();
  o.index_put_({Slice(0, 2)}, src);
  CHECK(same(o.pixels.index({Slice(0, 2)}), at::zeros({2, 3, 4, 5}, at::kByte)));
  CHECK(same(o.agent.pos.index({Slice(0, 2)}), at::zeros({2, 2})));
  CHECK(o.reward[2].item<float>() == 2.5f);
  o.index_put_({3}, 7);
  CHECK(o.reward[3].item<float>() == 7.f);
  CHECK(o.pixels[3].eq(7).all().item<bool>());
  o.index_put_({2}, at::scalar_tensor(1.0));
  CHECK(o.agent.vel[2].eq(1).all().item<bool>());
}

TEST_CASE("index_put_ of another string into a string field is refused, not dropped") {
  // tensordict 0.15.3 stores c[1] = C(s="b") per element (a NonTensorStack);
  // a `string` field holds one value, so the write is refused before any
  // tensor is written.
  auto o = make_obs({3});
  auto src = make_obs({});
  src.task = "run";
  src.reward.fill_(9);
  CHECK(message_of([&] { o.index_put_({1}, src); }) ==
        "index_put_: non-tensor field Observation.task holds 'walk' for the whole batch and cannot take 'run' at an index "
        "(one value per object; tensordict would store one per element)");
  CHECK(o.reward[1].item<float>() == 1.5f);
  CHECK(o.task == "walk");
  tensordict::TensorDict row({{"reward", at::tensor(9.f)}, {"task", tensordict::NonTensorData("run")}}, {});
  CHECK(message_of([&] { o.index_put_({1}, row); }) ==
        "index_put_: non-tensor field Observation.task holds 'walk' for the whole batch and cannot take 'run' at an index "
        "(one value per object; tensordict would store one per element)");
  CHECK(o.reward[1].item<float>() == 1.5f);
  tensordict::TensorDict stray({{"nope", tensordict::NonTensorData("x")}}, {});
  CHECK(message_of([&] { o.index_put_({1}, stray); }) == "Observation.index_put_: key 'nope' is not a non-tensor field of Observation");
  // The same value is written as before.
  src.task = "walk";
  o.index_put_({1}, src);
  CHECK(o.reward[1].item<float>() == 9.f);
}

// ---- stack, cat, unbind, split, chunk ---------------------------------------------
TEST_CASE("stack and cat") {
  const auto a = make_obs({2});
  const auto b = make_obs({2}) * 2;
  auto s = Observation::stack({a, b}, 1);
  CHECK(s.batch_size() == at::IntArrayRef({2, 2}));
  CHECK(s.agent.batch_size() == at::IntArrayRef({2, 2}));
  CHECK(same(s.pixels, at::stack({a.pixels, b.pixels}, 1)));
  CHECK(same(s.agent.vel, at::stack({a.agent.vel, b.agent.vel}, 1)));
  auto c = Observation::cat({a, b, a}, 0);
  CHECK(c.batch_size() == at::IntArrayRef({6}));
  CHECK(same(c.depth, at::cat({a.depth, b.depth, a.depth}, 0)));
  CHECK(same(c.agent.pos, at::cat({a.agent.pos, b.agent.pos, a.agent.pos}, 0)));

  auto other = make_obs({2});
  other.task = "run";
  CHECK(message_of([&] { Observation::stack({a, other}); }) ==
        "stack: non-tensor field Observation.task differs: 'walk' in element 0 but 'run' in element 1");
  CHECK(message_of([&] { Observation::cat({a, make_obs({2}, false)}); }) ==
        "cat: optional field Observation.depth is set in element 0 but not in element 1 (or the reverse)");
  CHECK_THROWS_AS(Observation::stack({}), std::runtime_error);  // torch.stack([]): RuntimeError
}

TEST_CASE("unbind, split, chunk") {
  const auto o = make_obs({5, 2});
  auto u = o.unbind(1);
  REQUIRE(u.size() == 2);
  check_members(u[1], o, [](const at::Tensor& t) { return t.unbind(1)[1]; });
  CHECK(u[1].batch_size() == at::IntArrayRef({5}));
  auto sp = o.split(2, 0);
  REQUIRE(sp.size() == 3);
  CHECK(sp[2].batch_size() == at::IntArrayRef({1, 2}));
  check_members(sp[2], o, [](const at::Tensor& t) { return t.split(2, 0)[2]; });
  auto sz = o.split(std::vector<int64_t>{1, 4}, 0);
  REQUIRE(sz.size() == 2);
  check_members(sz[1], o, [](const at::Tensor& t) { return t.split_with_sizes({1, 4}, 0)[1]; });
  auto ch = o.chunk(2, 0);
  REQUIRE(ch.size() == 2);
  check_members(ch[0], o, [](const at::Tensor& t) { return t.chunk(2, 0)[0]; });
  CHECK(ch[0].agent.batch_size() == at::IntArrayRef({3, 2}));
}

// ---- shape ops ---------------------------------------------------------------------------
TEST_CASE("shape ops over batch dims") {
  const auto o = make_obs({2, 3});
  auto feat = [](const at::Tensor& t) { return t.sizes().slice(2).vec(); };
  check_members(o.reshape({6}), o, [&](const at::Tensor& t) { return t.reshape(join({6}, feat(t))); });
  CHECK(o.reshape({-1}).batch_size() == at::IntArrayRef({6}));
  check_members(o.view({3, 2}), o, [&](const at::Tensor& t) { return t.view(join({3, 2}, feat(t))); });
  check_members(o.permute({1, 0}), o, [&](const at::Tensor& t) { return t.transpose(0, 1); });
  check_members(o.transpose(0, -1), o, [&](const at::Tensor& t) { return t.transpose(0, 1); });
  CHECK(o.transpose(0, 1).batch_size() == at::IntArrayRef({3, 2}));
  check_members(o.unsqueeze(2), o, [&](const at::Tensor& t) { return t.unsqueeze(2); });
  CHECK(o.unsqueeze(-1).batch_size() == at::IntArrayRef({2, 3, 1}));
  check_members(o.unsqueeze(0).squeeze(), o, [&](const at::Tensor& t) { return t; });
  check_members(o.unsqueeze(1).squeeze(1), o, [&](const at::Tensor& t) { return t; });
  check_members(o.expand({4, 2, 3}), o, [&](const at::Tensor& t) { return t.expand(join({4, 2, 3}, feat(t))); });
  CHECK(o.expand({4, 2, 3}).agent.batch_size() == at::IntArrayRef({4, 2, 3}));
  check_members(o.flatten(), o, [&](const at::Tensor& t) { return t.flatten(0, 1); });
  check_members(o.flatten().unflatten(0, {2, 3}), o, [&](const at::Tensor& t) { return t; });
  CHECK_THROWS(o.permute({0, 0}));
  CHECK_THROWS(o.reshape({5}));
  CHECK_THROWS(o.expand({3, 3}));
}

// The typed layer runs the dynamic core's shape plans (shape_plan.h): every
// shape op gives the tensordict's batch size, names, leaves and errors.
namespace {
void require_same_as_dynamic(const Observation& typed, const tensordict::TensorDict& dynamic) {
  const tensordict::TensorDict got = typed.to_tensordict();
  REQUIRE(got.batch_size() == dynamic.batch_size());
  CHECK((got.names() == dynamic.names()));
  const auto keys = dynamic.keys({.include_nested = true, .leaves_only = true});
  CHECK(got.keys({.include_nested = true, .leaves_only = true}).size() == keys.size());
  for (const auto& key : keys) {
    if (!dynamic.get_value(key)->is_tensor()) continue;
    CHECK(same(got.get(key), dynamic.get(key)));
  }
}

template <class Typed, class Dynamic>
void require_same_error(Typed&& typed, Dynamic&& dynamic) {
  const std::string expected = message_of(dynamic);
  CHECK(expected != "<no exception>");
  CHECK(message_of(typed) == expected);
}
}  // namespace

TEST_CASE("shape ops and their errors are the dynamic TensorDict's") {
  const auto o = make_obs({2, 3}).rename_({"env", "time"});
  const tensordict::TensorDict td = o.to_tensordict();
  require_same_as_dynamic(o.reshape({3, -1}), td.reshape({3, -1}));
  require_same_as_dynamic(o.view({6}), td.view({6}));
  require_same_as_dynamic(o.permute({1, 0}), td.permute({1, 0}));
  require_same_as_dynamic(o.transpose(-1, 0), td.transpose(-1, 0));
  require_same_as_dynamic(o.unsqueeze(-1).squeeze(), td.unsqueeze(-1).squeeze());
  require_same_as_dynamic(o.unsqueeze(1), td.unsqueeze(1));
  require_same_as_dynamic(o.expand({4, -1, 3}), td.expand({4, -1, 3}));
  require_same_as_dynamic(o.flatten(), td.flatten());
  require_same_as_dynamic(o.flatten().unflatten(0, {3, -1}), td.flatten().unflatten(0, {3, -1}));
  require_same_as_dynamic(o.unbind(1)[2], td.unbind(1)[2]);
  require_same_as_dynamic(o.split(std::vector<int64_t>{1, 2}, 1)[1], td.split(std::vector<int64_t>{1, 2}, 1)[1]);
  CHECK(o.chunk(2, 1).size() == td.chunk(2, 1).size());
  CHECK(o.index({Slice(0, 0)}).chunk(3, 0).size() == td.index({Slice(0, 0)}).chunk(3, 0).size());  // torch: 3 empty pieces
  require_same_as_dynamic(Observation::stack({o, o}, -1), tensordict::stack({td, td}, -1));
  require_same_as_dynamic(Observation::cat({o, o.index({Slice(0, 1)})}, 0), tensordict::cat({td, td.index({Slice(0, 1)})}, 0));

  // A batchless instance flattens to batch [1] (torch.flatten of a 0-dim
  // tensor), as the tensordict does.
  const auto scalar = make_obs({});
  CHECK(scalar.flatten().batch_size() == at::IntArrayRef({1}));
  require_same_as_dynamic(scalar.flatten(), scalar.to_tensordict().flatten());

  require_same_error([&] { o.reshape({5}); }, [&] { td.reshape({5}); });
  require_same_error([&] { o.view({4, -1}); }, [&] { td.view({4, -1}); });
  require_same_error([&] { o.expand({-2, 2, 3}); }, [&] { td.expand({-2, 2, 3}); });
  require_same_error([&] { o.expand({3}); }, [&] { td.expand({3}); });
  require_same_error([&] { o.permute({0, 0}); }, [&] { td.permute({0, 0}); });
  require_same_error([&] { o.transpose(0, 2); }, [&] { td.transpose(0, 2); });
  require_same_error([&] { o.flatten(1, 0); }, [&] { td.flatten(1, 0); });
  require_same_error([&] { o.unflatten(1, {2, 2}); }, [&] { td.unflatten(1, {2, 2}); });
  require_same_error([&] { o.split(std::vector<int64_t>{1, 1}, 1); }, [&] { td.split(std::vector<int64_t>{1, 1}, 1); });
  require_same_error([&] { o.split(0, 1); }, [&] { td.split(0, 1); });
  require_same_error([&] { o.chunk(0, 1); }, [&] { td.chunk(0, 1); });
  const auto other = make_obs({2, 4});
  require_same_error([&] { Observation::stack({o, other}); }, [&] { tensordict::stack({td, other.to_tensordict()}); });
  require_same_error([&] { Observation::cat({o, other}, 0); }, [&] { tensordict::cat({td, other.to_tensordict()}, 0); });
  CHECK_THROWS_AS(o.reshape({5}), std::runtime_error);
  CHECK_THROWS_AS(o.permute({0, 0}), std::invalid_argument);
}

// ---- device, dtype, copies -------------------------------------------------------------
TEST_CASE("to, clone, detach, contiguous") {
  const auto o = make_obs({3});
  // A typed result passes its own validate(): to() casts the fields whose
  // schema leaves the dtype open and refuses to change a declared one.
  CHECK(message_of([&] { o.to(at::kDouble); }) ==
        "to: Observation.pixels would be float64, but the schema declares uint8 (to_tensordict() gives a TensorDict free of "
        "the schema's dtypes)");
  CHECK(message_of([&] { o.agent.to(at::kHalf); }) ==
        "to: Agent.pos would be float16, but the schema declares float32 (to_tensordict() gives a TensorDict free of the "
        "schema's dtypes)");
  const tct::Named named({.x = iota({2, 3, 2}), .free = iota({2, 3, 7}, at::kLong)}, {2, 3});
  const tct::Named as_float = named.to(at::kFloat);  // x is float32 already; free is open
  CHECK(same(as_float.free, named.free.to(at::kFloat)));
  CHECK(as_float.x.data_ptr() == named.x.data_ptr());
  as_float.validate();
  CHECK(message_of([&] { named.to(at::kDouble); }).rfind("to: Named.x would be float64", 0) == 0);
  const tensordict::TensorDict d = o.to_tensordict().to(at::kDouble);
  CHECK(d.get("pixels").scalar_type() == at::kDouble);
  auto cpu = o.to(at::Device(at::kCPU));
  CHECK(cpu.device() == at::Device(at::kCPU));
  CHECK(cpu.agent.device() == at::Device(at::kCPU));
  auto c = o.clone();
  check_members(c, o, [](const at::Tensor& t) { return t; });
  CHECK(c.pixels.data_ptr() != o.pixels.data_ptr());
  auto req = o.apply([](const at::Tensor& t) { return t.is_floating_point() ? t.clone().requires_grad_() : t; });
  CHECK(req.reward.requires_grad());
  CHECK(!req.detach().reward.requires_grad());
  auto nc = o.transpose(0, 0).apply([](const at::Tensor& t) { return t.dim() > 1 ? t.transpose(0, 1).transpose(0, 1) : t; });
  check_members(nc.contiguous(), o, [](const at::Tensor& t) { return t.contiguous(); });
}

// ---- apply, math, comparison --------------------------------------------------------------
TEST_CASE("apply, math and comparison give the typed class") {
  const auto o = make_obs({2});
  check_members(o.apply([](const at::Tensor& t) { return t * 2; }), o, [](const at::Tensor& t) { return t * 2; });
  check_members(o + o, o, [](const at::Tensor& t) { return t + t; });
  check_members(o - 1, o, [](const at::Tensor& t) { return t - 1; });
  check_members(o * 3, o, [](const at::Tensor& t) { return t * 3; });
  check_members(o.add(o, 2), o, [](const at::Tensor& t) { return t.add(t, 2); });
  check_members(o.sub(1, 3), o, [](const at::Tensor& t) { return t.sub(1, 3); });
  check_members(o.pow(2), o, [](const at::Tensor& t) { return t.pow(2); });
  check_members(o.maximum(o * 2), o, [](const at::Tensor& t) { return t.maximum(t * 2); });
  check_members(o.clamp(1, 5), o, [](const at::Tensor& t) { return t.clamp(1, 5); });
  check_members(o.clamp_max(3), o, [](const at::Tensor& t) { return t.clamp_max(3); });
  check_members(-o, o, [](const at::Tensor& t) { return -t; });
  check_members(o.abs(), o, [](const at::Tensor& t) { return t.abs(); });
  check_members(o.sign(), o, [](const at::Tensor& t) { return t.sign(); });
  // Ops that would give a declared field another dtype are refused by name.
  CHECK(message_of([&] { o / 2; }) ==
        "div: Observation.pixels would be float32, but the schema declares uint8 (to_tensordict() gives a TensorDict free of "
        "the schema's dtypes)");
  CHECK(message_of([&] { o.sqrt(); }).rfind("sqrt: Observation.pixels would be float32", 0) == 0);
  const Agent a = o.agent;
  CHECK(same(a.sqrt().pos, a.pos.sqrt()));
  CHECK(same(a.exp().vel, a.vel.exp()));
  CHECK(same((a / 2).pos, a.pos / 2));
  CHECK(same(a.div(a.clone() + 1).vel, a.vel.div(a.vel + 1)));
}

TEST_CASE("in-place math writes into the fields' tensors") {
  auto o = make_obs({2});
  const auto before = o.clone();
  const void* pixels = o.pixels.data_ptr();
  o.mul_(2).add_(before, 3);
  CHECK(o.pixels.data_ptr() == pixels);
  check_members(o, before, [](const at::Tensor& t) { return (t * 2).add(t, 3); });
  o.agent.tanh_();
  CHECK(same(o.agent.pos, (before.agent.pos * 2 + before.agent.pos * 3).tanh()));
  o.clamp_(std::nullopt, 10).sub_(1);
  CHECK(same(o.reward, (before.reward * 5).clamp_max(10) - 1));
  // uint8 pixels cannot hold sqrt's floats: refused, naming the key.
  CHECK(message_of([&] { o.sqrt_(); }).find("pixels") != std::string::npos);
  auto z = make_obs({2});
  z.update_(tensordict::TensorDict({{"reward", at::zeros({2})}}, {2}));
  CHECK(same(z.reward, at::zeros({2})));
  z.set_({"agent", "pos"}, at::ones({2, 2}));
  CHECK(same(z.agent.pos, at::ones({2, 2})));
  CHECK_THROWS_AS(z.set_("reward", at::ones({3})), std::invalid_argument);
}

TEST_CASE("comparisons, predicates and reductions give TensorDicts") {
  const auto o = make_obs({2});
  const tensordict::TensorDict eq(o == o.clone());
  CHECK(eq.get("pixels").scalar_type() == at::kBool);
  CHECK(eq.all());
  CHECK(same((o > 3).get({"agent", "pos"}), o.agent.pos > 3));
  CHECK(same((o <= 2).get("reward"), o.reward <= 2));
  CHECK(same(o.ne(o * 2).get("depth"), o.depth.ne(o.depth * 2)));
  CHECK(!(o != o).any());
  CHECK(same(o.isnan().get("reward"), o.reward.isnan()));
  CHECK(same(o.sum().get("pixels"), o.pixels.sum()));  // every dim of each leaf
  CHECK(o.sum().get("pixels").scalar_type() == at::kLong);
  CHECK(same(o.sum({0}).get("pixels"), o.pixels.sum(0)));
  CHECK(same(o.agent.mean({0}).get("vel"), o.agent.vel.mean(0)));
  CHECK_THROWS_WITH(o.mean({0}), Catch::Contains("pixels"));  // torch has no mean of uint8
  CHECK(same(o.amax({0}, {.keepdim = true}).get("reward"), o.reward.amax(0, true)));
  const auto [values, indices] = o.max(0);
  CHECK(same(values.get("depth"), std::get<0>(o.depth.max(0))));
  CHECK(same(indices.get("depth"), std::get<1>(o.depth.max(0))));
  CHECK(values.get_non_tensor("task") == "walk");
}

TEST_CASE("masked_select, gather, select, exclude") {
  const auto o = make_obs({3});
  const auto mask = at::tensor(std::vector<int64_t>{1, 0, 1}).to(at::kBool);
  const Observation picked = o.masked_select(mask);
  CHECK(picked.batch_size() == at::IntArrayRef({2}));
  check_members(picked, o, [&](const at::Tensor& t) { return t.index({mask}); });
  const auto index = at::tensor(std::vector<int64_t>{2, 2, 0, 1});
  const Observation gathered = o.gather(0, index);
  CHECK(gathered.batch_size() == at::IntArrayRef({4}));
  check_members(gathered, o, [&](const at::Tensor& t) { return t.index({index}); });
  const tensordict::TensorDict some = o.select({"reward", {"agent", "pos"}, "task"});
  // tensordict 0.15: leaves_only lists tensors; non-tensor data with is_leaf.
  CHECK(some.keys({.include_nested = true, .leaves_only = true}) == std::vector<tensordict::NestedKey>{"reward", {"agent", "pos"}});
  CHECK(some.keys({.include_nested = true, .leaves_only = true, .is_leaf = tensordict::IsLeaf::NonTensor}) ==
        std::vector<tensordict::NestedKey>{"reward", {"agent", "pos"}, "task"});
  CHECK(some.get("reward").data_ptr() == o.reward.data_ptr());
  CHECK(some.get_non_tensor("task") == "walk");
  CHECK(!o.exclude({"pixels", "agent", "tags", "scale"}).contains("pixels"));
  CHECK(o.exclude({"pixels"}).contains("task"));
  CHECK_THROWS_AS(o.select({"nope"}), tensordict::KeyError);
}

TEST_CASE("update sets fields from a tensordict, validated, refused when locked") {
  auto o = make_obs({2});
  tensordict::TensorDict in({{"reward", at::full({2}, 7.0)}, {{"agent", "vel"}, at::ones({2, 2})}}, {2});
  in.set_non_tensor("task", "pendulum");
  o.update(in);
  CHECK(same(o.reward, at::full({2}, 7.0)));
  CHECK(same(o.agent.vel, at::ones({2, 2})));
  CHECK(o.task == "pendulum");
  o.update(make_obs({2}) * 0);
  CHECK(same(o.reward, at::zeros({2})));
  CHECK(o.task == "walk");
  // A wrong dtype or an unknown key is refused and changes nothing.
  const auto before = o.clone();
  CHECK(message_of([&] { o.update(tensordict::TensorDict({{"reward", at::ones({2}, at::kLong)}}, {2})); }) ==
        "Observation.reward: dtype must be float32 (got int64)");
  CHECK_THROWS_AS(o.update(tensordict::TensorDict({{"nope", at::ones({2})}}, {2})), tensordict::KeyError);
  check_members(o, before, [](const at::Tensor& t) { return t; });
  o.lock_();
  CHECK(message_of([&] { o.update(in); }).rfind("Cannot modify locked TensorDict", 0) == 0);
}

TEST_CASE("where and masked_fill broadcast a batch mask over feature dims") {
  const auto o = make_obs({3});
  const auto z = o * 0;
  const auto cond = at::tensor(std::vector<int64_t>{1, 0, 1}).to(at::kBool);
  auto expand = [&](const at::Tensor& t) {
    std::vector<int64_t> shape(t.dim(), 1);
    shape[0] = 3;
    return cond.view(shape);
  };
  auto w = o.where(cond, z);
  check_members(w, o, [&](const at::Tensor& t) { return at::where(expand(t), t, t * 0); });
  auto m = o.masked_fill(cond, 9);
  check_members(m, o, [&](const at::Tensor& t) { return t.masked_fill(expand(t), 9); });
  auto in_place = o.clone();
  in_place.masked_fill_(cond, 9);
  check_members(in_place, o, [&](const at::Tensor& t) { return t.masked_fill(expand(t), 9); });
}

// ---- conversion ----------------------------------------------------------------------
TEST_CASE("to_tensordict and from_tensordict") {
  auto o = make_obs({2});
  o.task = "swim";
  auto td = o.to_tensordict();
  CHECK(td.batch_size() == at::IntArrayRef({2}));
  CHECK(same(td.get("pixels"), o.pixels));
  CHECK(same(td.get({"agent", "pos"}), o.agent.pos));
  // Non-tensor fields are non-tensor data: the tree converts back losslessly.
  CHECK(td.get_non_tensor("task") == "swim");
  CHECK(td.get_non_tensor("tags") == tensordict::Json::array({"a", "b"}));
  CHECK(td.get_non_tensor("scale") == 1.0);
  auto back = Observation::from_tensordict(td);
  check_members(back, o, [](const at::Tensor& t) { return t; });
  CHECK(back.task == "swim");
  CHECK(Observation::from_tensordict(td.exclude({"task"})).task == "walk");
  CHECK(Observation::from_tensordict(td.exclude({"task"}), o).task == "swim");

  auto bad = td.clone();
  bad.set("pixels", iota({2, 3, 4, 5}));
  CHECK(message_of([&] { Observation::from_tensordict(bad); }) == "Observation.pixels: dtype must be uint8 (got float32)");
  auto extra = td.clone();
  extra.set("surprise", at::zeros({2}));
  CHECK_THROWS_AS(Observation::from_tensordict(extra), tensordict::KeyError);
  CHECK(message_of([&] { Observation::from_tensordict(extra); }) ==
        "Observation.from_tensordict: key 'surprise' is not a field of Observation (from_tensordict(td, {.strict = false}) ignores extra "
        "keys)");
  // strict=false ignores extra keys, at every level.
  extra.set({"agent", "extra"}, at::zeros({2}));
  CHECK(same(Observation::from_tensordict(extra, {.strict = false}).pixels, o.pixels));
  CHECK(same(Observation::from_tensordict(extra, o, {.strict = false}).agent.pos, o.agent.pos));
}

TEST_CASE("from_tensordict reads non-tensor fields held as non-tensor data") {
  auto o = make_obs({2});
  auto td = o.to_tensordict();
  td.set_non_tensor("task", "swim");
  td.set_non_tensor("scale", 2.5);
  const auto back = Observation::from_tensordict(td);
  CHECK(back.task == "swim");
  CHECK(back.scale == 2.5);
  CHECK(back.tags == Observation{}.tags);  // absent: the default
  td.set_non_tensor("scale", "big");
  CHECK_THROWS_AS(Observation::from_tensordict(td), std::invalid_argument);
  td.set_non_tensor("scale", 1.0);
  td.set("task", at::zeros({2}));
  CHECK(message_of([&] { Observation::from_tensordict(td); }) == "Observation.task: the entry is not non-tensor data");
}

// ---- repr --------------------------------------------------------------------------------
// The compact strings are what tensordict 0.15.3 prints for the same
// objects of the Python classes generated from tc_obs.yaml (run in the test
// venv), where a list<string> field is a tuple.
TEST_CASE("operator<< prints tensordict's compact tensorclass repr") {
  auto o = make_obs({2}, false);
  std::ostringstream os;
  os << o;
  CHECK(os.str() ==
        "Observation(batch_size=[2], fields={\n"
        "    agent: Agent{pos: f32[2], vel: f32[2]},\n"
        "    pixels: u8[3,4,5],\n"
        "    reward: f32[],\n"
        "    scale: float,\n"
        "    tags: tuple,\n"
        "    task: str,\n"
        "    depth: None})");
  CHECK(make_obs({2, 3}).repr() ==
        "Observation(batch_size=[2,3], fields={\n"
        "    agent: Agent{pos: f32[2], vel: f32[2]},\n"
        "    depth: f32[4,5],\n"
        "    pixels: u8[3,4,5],\n"
        "    reward: f32[],\n"
        "    scale: float,\n"
        "    tags: tuple,\n"
        "    task: str})");
  CHECK(o.to(at::Device(at::kCPU)).repr() ==
        "Observation(batch_size=[2], device=cpu, fields={\n"
        "    agent: Agent{pos: f32[2], vel: f32[2]},\n"
        "    pixels: u8[3,4,5],\n"
        "    reward: f32[],\n"
        "    scale: float,\n"
        "    tags: tuple,\n"
        "    task: str,\n"
        "    depth: None})");
  {
    set_printoptions guard({.show_batch_size = false, .show_dtype = false});
    CHECK(o.repr() ==
          "Observation(fields={\n"
          "    agent: Agent{pos: [2], vel: [2]},\n"
          "    pixels: [3,4,5],\n"
          "    reward: [],\n"
          "    scale: float,\n"
          "    tags: tuple,\n"
          "    task: str,\n"
          "    depth: None})");
  }
  set_printoptions guard({.sort_keys = SortKeys::insertion()});
  CHECK(o.repr() ==
        "Observation(batch_size=[2], fields={\n"
        "    pixels: u8[3,4,5],\n"
        "    reward: f32[],\n"
        "    agent: Agent{pos: f32[2], vel: f32[2]},\n"
        "    task: str,\n"
        "    tags: tuple,\n"
        "    scale: float,\n"
        "    depth: None})");
}

TEST_CASE("operator<< prints tensordict's detailed tensorclass repr under compact=false") {
  // the generated Python class of tc_obs.yaml under set_printoptions(compact=False) (run in the test venv)
  auto o = make_obs({2}, false);
  set_printoptions detailed({.compact = false});
  std::ostringstream os;
  os << o;
  CHECK(os.str() ==
        "Observation(\n"
        "    agent=Agent(\n"
        "        pos=Tensor(shape=torch.Size([2, 2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
        "        vel=Tensor(shape=torch.Size([2, 2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
        "        batch_size=torch.Size([2]),\n"
        "        device=None,\n"
        "        is_shared=False),\n"
        "    pixels=Tensor(shape=torch.Size([2, 3, 4, 5]), device=cpu, dtype=torch.uint8, is_shared=False),\n"
        "    reward=Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
        "    scale=NonTensorData(data=1.0, batch_size=torch.Size([2]), device=None),\n"
        "    tags=NonTensorData(data=('a', 'b'), batch_size=torch.Size([2]), device=None),\n"
        "    task=NonTensorData(data=walk, batch_size=torch.Size([2]), device=None),\n"
        "    depth=None,\n"
        "    batch_size=torch.Size([2]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

// ---- the ready-made schemas ----------------------------------------------------------------
TEST_CASE("ready-made schemas: rl, vision, sequence") {
  using tc::rl::Transition;
  auto obs = [](int64_t n) {
    return tc::rl::Observation({.pixels = at::zeros({n, 3, 8, 8}, at::kByte), .state = at::randn({n, 4})}, {n});
  };
  Transition t({.observation = obs(4),
                .action = at::randn({4, 2}),
                .reward = at::zeros({4, 1}),
                .done = at::zeros({4, 1}, at::kBool),
                .terminated = at::zeros({4, 1}, at::kBool),
                .next = obs(4),
                .env_name = "cartpole"},
               {4});
  auto rollout = Transition::stack({t, t.clone()}, 1);
  CHECK(rollout.batch_size() == at::IntArrayRef({4, 2}));
  CHECK(rollout.next.pixels.sizes() == at::IntArrayRef({4, 2, 3, 8, 8}));
  CHECK(rollout.env_name == "cartpole");

  tc::vision::VisionBatch v({.images = at::rand({2, 3, 16, 16}),
                             .masks = at::zeros({2, 16, 16}, at::kBool),
                             .labels = at::zeros({2}, at::kLong)},
                            {2});
  CHECK((v.names() == tensordict::Names{"batch"}));
  CHECK(message_of([&] {
          tc::vision::VisionBatch({.images = at::rand({2, 3, 16, 16}), .masks = at::zeros({2, 8, 16}, at::kBool),
                                   .labels = at::zeros({2}, at::kLong)},
                                  {2});
        }) == "VisionBatch.masks: symbolic dim H is 16 in images but 8 in masks (dim 1)");

  auto tokens = at::randint(100, {3, 7}, at::kLong);
  tc::seq::SequenceBatch s({.tokens = tokens, .mask = tokens > 10, .lengths = at::full({3}, 7, at::kLong)}, {3});
  auto first = s.index({Slice(0, 2)});
  CHECK(same(first.mask, (tokens > 10).index({Slice(0, 2)})));
  CHECK(first.pad_id == 0);
}

// ---- cost against the hand-written loop (hidden: run with "[.perf]") --------------------------
TEST_CASE("typed index and stack cost no more than the hand-written loop", "[.perf]") {
  const auto o = make_obs({64, 8});
  constexpr int kIters = 20000;
  auto time = [](auto&& fn) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kIters; ++i) fn(i);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kIters;
  };
  for (int round = 0; round < 2; ++round) {  // the first round warms up
    const double typed = time([&](int i) { return o.index({i % 64, Slice(0, 4)}); });
    const double loop = time([&](int i) {
      Observation r = o;
      const std::vector<TensorIndex> idx{i % 64, Slice(0, 4)};
      r.pixels = o.pixels.index(idx);
      r.depth = o.depth.index(idx);
      r.reward = o.reward.index(idx);
      r.agent.pos = o.agent.pos.index(idx);
      r.agent.vel = o.agent.vel.index(idx);
      return r;
    });
    const std::vector<Observation> list{o, o};
    const double typed_stack = time([&](int) { return Observation::stack(list, 0); });
    const double loop_stack = time([&](int) {
      Observation r = o;
      r.pixels = at::stack({o.pixels, o.pixels});
      r.depth = at::stack({o.depth, o.depth});
      r.reward = at::stack({o.reward, o.reward});
      r.agent.pos = at::stack({o.agent.pos, o.agent.pos});
      r.agent.vel = at::stack({o.agent.vel, o.agent.vel});
      return r;
    });
    if (round == 1) {
      WARN("index: typed " << typed << " us, hand loop " << loop << " us, ratio " << typed / loop);
      WARN("stack: typed " << typed_stack << " us, hand loop " << loop_stack << " us, ratio " << typed_stack / loop_stack);
      CHECK(typed / loop < 1.3);
    }
  }
}
