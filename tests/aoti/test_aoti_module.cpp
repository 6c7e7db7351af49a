// AOTIModule runs packages that tensorclass.export wrote from Python modules
// (export_cases.py, once per test run): outputs equal Python tensordict's on
// the same inputs, on TensorDicts and on generated structs; every error path
// names the package and the key.
#include <torch/torch.h>
#include <nlohmann/json.hpp>
#include <catch2/catch.hpp>

#include <tensordict/memmap.h>
#include <tensordict/nn.h>
#include <tensordict/nn/aoti.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "../message_of.h"
#include "deploy.tc.h"

using tensordict::KeyError;
using tensordict::NestedKey;
using tensordict::TensorDict;
namespace tnn = tensordict::nn;
using td_test::message_of;

namespace {

// The directory export_cases.py wrote (the CTest fixture sets it).
std::string packages() {
  const char* dir = std::getenv("TENSORCLASS_AOTI_PACKAGES");
  if (!dir) FAIL("TENSORCLASS_AOTI_PACKAGES is not set: run this suite through CTest (the export fixture)");
  return dir;
}
std::string package(const std::string& name) { return packages() + "/" + name + ".pt2"; }
TensorDict load(const std::string& name) { return tensordict::load_memmap(packages() + "/" + name); }

// Every leaf of `expected` equals `got`'s to 1e-5.
void check_equal(const TensorDict& got, const TensorDict& expected) {
  for (const auto& key : expected.keys({.include_nested = true, .leaves_only = true})) {
    INFO("key " << key.repr());
    REQUIRE(got.contains(key));
    CHECK(got.get(key).sizes() == expected.get(key).sizes());
    CHECK(torch::allclose(got.get(key), expected.get(key), 1e-5, 1e-5));
  }
}

}  // namespace

TEST_CASE("an exported MLP runs on a TensorDict at another batch size, as in Python", "[aoti]") {
  tnn::AOTIModule module(package("mlp"));
  CHECK(module->in_keys() == tnn::Keys{"obs"});
  CHECK(module->out_keys() == tnn::Keys{"action"});
  CHECK(module->spec().dynamic_batch);
  CHECK(module->spec().inputs[0].dtype == at::kFloat);
  CHECK(module->spec().inputs[0].event_shape == std::vector<int64_t>{3});
  TensorDict td = load("mlp_inputs");
  REQUIRE(td.batch_size() == at::IntArrayRef{7});
  TensorDict result = module(td);
  CHECK(result.impl() == td.impl());  // written into the input, as TensorDictModule does
  check_equal(td, load("mlp_expected"));

  // Into a given output; a batch of one; no batch dims on the tensordict.
  TensorDict out;
  module(load("mlp_inputs"), out);
  check_equal(out, load("mlp_expected"));
  TensorDict one = load("mlp_inputs").narrow(0, 0, 1).clone();
  module(one);
  CHECK(torch::allclose(one.get("action"), load("mlp_expected").get("action").narrow(0, 0, 1), 1e-5, 1e-5));
  TensorDict flat({{"obs", load("mlp_inputs").get("obs")}});
  module(flat);
  check_equal(flat, load("mlp_expected"));
  // On a generated struct (the package has no schema: any struct with the
  // keys will do).
  deploy::PolicyStep step({.obs = load("mlp_inputs").get("obs")}, {7});
  module(step);
  CHECK(torch::allclose(step.action, load("mlp_expected").get("action"), 1e-5, 1e-5));
  // The loader's own call gives the same.
  CHECK(torch::allclose(module->run_tensors({load("mlp_inputs").get("obs")})[0], load("mlp_expected").get("action")));
}

TEST_CASE("an exported two-module sequence: nested in_keys, several inputs, intermediate keys", "[aoti]") {
  tnn::AOTIModule module(package("seq"));
  CHECK(module->in_keys() == tnn::Keys{{"agent", "obs"}, "bias"});
  CHECK(module->out_keys() == tnn::Keys{"hidden", {"agent", "action"}});
  CHECK(module->spec().dynamic_batch);
  CHECK(module->spec().batch_size == std::vector<int64_t>{4, 2});
  TensorDict td = load("seq_inputs");
  module(td);
  check_equal(td, load("seq_expected"));

  // On a generated struct with a nested class: "hidden" is no field, dropped.
  const TensorDict inputs = load("seq_inputs");
  deploy::SeqStep step({.agent = deploy::Agent({.obs = inputs.get({"agent", "obs"})}, {3, 2}), .bias = inputs.get("bias")},
                       {3, 2});
  module(step);
  CHECK(torch::allclose(step.agent.action, load("seq_expected").get({"agent", "action"}), 1e-5, 1e-5));

  // In a TensorDictSequential with a C++ module, and with select_out_keys.
  tnn::TensorDictSequential chain({module, tnn::TensorDictModule([](const at::Tensor& a) { return a * 2; },
                                                                 {{"agent", "action"}}, {"doubled"})});
  TensorDict chained = chain(load("seq_inputs"));
  CHECK(torch::allclose(chained.get("doubled"), load("seq_expected").get({"agent", "action"}) * 2, 1e-5, 1e-5));
  module->select_out_keys({{"agent", "action"}});
  TensorDict selected = module(load("seq_inputs"));
  CHECK(!selected.contains("hidden"));
  check_equal(selected, load("seq_expected").exclude({"hidden"}));
  module->reset_out_keys();
}

TEST_CASE("an exported Gaussian policy writes loc, scale, action and its log-probability", "[aoti]") {
  tnn::AOTIModule module(package("gaussian"));
  CHECK(module->out_keys() == tnn::Keys{"params", "loc", "scale", "action", "action_log_prob"});
  TensorDict td = load("gaussian_inputs");
  module(td);
  check_equal(td, load("gaussian_expected"));
  // The deterministic action is the mean, and the log-probability Normal's.
  const at::Tensor loc = td.get("loc"), scale = td.get("scale");
  CHECK(torch::allclose(td.get("action"), loc));
  CHECK(torch::allclose(td.get("action_log_prob"), -scale.log() - 0.5 * std::log(2 * M_PI), 1e-5, 1e-5));
}

TEST_CASE("an exported policy runs on a generated struct: module(step), forward<Out>", "[aoti][tensorclass]") {
  tnn::AOTIModule module(package("typed"));
  CHECK(module->spec().schema == std::string("<class 'deploy.PolicyStep'>"));
  const TensorDict expected = load("typed_expected");
  deploy::PolicyStep step({.obs = load("typed_inputs").get("obs"), .task = "push"}, {6});
  deploy::PolicyStep& same = module(step);  // params, loc and scale are no fields: dropped
  CHECK(&same == &step);
  CHECK(torch::allclose(step.action, expected.get("action"), 1e-5, 1e-5));
  CHECK(torch::allclose(step.action_log_prob, expected.get("action_log_prob"), 1e-5, 1e-5));
  CHECK(step.task == "push");

  deploy::PolicyStep fresh({.obs = load("typed_inputs").get("obs")}, {6});
  const deploy::PolicyOut out = module.forward<deploy::PolicyOut>(fresh);
  CHECK(torch::allclose(out.loc, expected.get("loc"), 1e-5, 1e-5));
  CHECK(torch::allclose(out.scale, expected.get("scale"), 1e-5, 1e-5));
  CHECK(torch::allclose(out.action, expected.get("action"), 1e-5, 1e-5));
  CHECK(!fresh.action.defined());  // the input object is left as it was

  // A struct of another schema is refused, naming both.
  deploy::Other other({.obs = load("typed_inputs").get("obs")}, {6});
  CHECK(message_of([&] { module(other); }) ==
        "AOTIModule('" + package("typed") +
            "'): the package was exported for <class 'deploy.PolicyStep'>, not for <class 'deploy.Other'>");
  CHECK_THROWS_AS(module(other), tensordict::TypeError);
}

TEST_CASE("AOTIModule: wrong inputs are refused by key before the model runs", "[aoti][errors]") {
  tnn::AOTIModule mlp(package("mlp"));
  const std::string name = "AOTIModule('" + package("mlp") + "'): ";
  TensorDict missing({{"x", torch::randn({7, 3})}}, {7});
  CHECK_THROWS_AS(mlp(missing), KeyError);
  CHECK(message_of([&] { mlp(missing); }) ==
        "AOTIModule: input key(s) ['obs'] not found in the tensordict (in_keys=['obs'], tensordict keys=['x'])");
  TensorDict doubles({{"obs", torch::randn({7, 3}, torch::kDouble)}}, {7});
  CHECK_THROWS_AS(mlp(doubles), tensordict::TypeError);
  CHECK(message_of([&] { mlp(doubles); }) == name + "input 'obs' has dtype float64, the package takes float32");
  TensorDict wide({{"obs", torch::randn({7, 4})}}, {7});
  CHECK_THROWS_AS(mlp(wide), tensordict::ValueError);
  CHECK(message_of([&] { mlp(wide); }) ==
        name + "input 'obs' has shape [7, 4], the package takes [*, 3] (1 batch dim(s), any size, event shape [3])");
  TensorDict extra_dim({{"obs", torch::randn({2, 7, 3})}}, {2});
  CHECK(message_of([&] { mlp(extra_dim); }) ==
        name + "input 'obs' has shape [2, 7, 3], the package takes [*, 3] (1 batch dim(s), any size, event shape [3])");
  CHECK(!wide.contains("action"));
  TensorDict elsewhere({{"obs", torch::empty({7, 3}, torch::TensorOptions().device(torch::kMeta))}});
  CHECK_THROWS_AS(mlp(elsewhere), tensordict::RuntimeError);
  CHECK(message_of([&] { mlp(elsewhere); }) == name + "input 'obs' is on meta, the package runs on cpu");

  // A package of a fixed batch size takes that size only.
  tnn::AOTIModule fixed(package("mlp_static"));
  CHECK(!fixed->spec().dynamic_batch);
  CHECK(message_of([&] { fixed(load("mlp_inputs")); }) ==
        "AOTIModule('" + package("mlp_static") +
            "'): input 'obs' has shape [7, 3], the package takes [5, 3] (1 batch dim(s), event shape [3])");
  TensorDict five({{"obs", load("mlp_inputs").get("obs").narrow(0, 0, 5)}}, {5});
  fixed(five);
  CHECK(torch::allclose(five.get("action"), load("mlp_expected").get("action").narrow(0, 0, 5), 1e-5, 1e-5));

  // The inputs of a package must agree on the batch dims (one size per dim).
  tnn::AOTIModule seq(package("seq"));
  TensorDict mismatched({{{"agent", "obs"}, torch::randn({3, 2, 3})}, {"bias", torch::randn({2, 3, 4})}});
  CHECK_THROWS_AS(seq(mismatched), tensordict::ValueError);
  CHECK(message_of([&] { seq(mismatched); }) ==
        "AOTIModule('" + package("seq") +
            "'): inputs ('agent', 'obs') and 'bias' differ in their batch dims ([3, 2] and [2, 3])");
}

TEST_CASE("AOTIModule: a package that cannot run here is refused when loaded, naming it", "[aoti][errors]") {
  if (!at::hasCUDA()) {
    CHECK_THROWS_AS(tnn::AOTIModule(package("cuda")), tensordict::RuntimeError);
    CHECK(message_of([&] { tnn::AOTIModule m(package("cuda")); }) ==
          "AOTIModule: package '" + package("cuda") +
              "' was compiled for cuda, and this process has no CUDA device (export it on the CPU to run it here)");
  }
  CHECK(message_of([&] { tnn::AOTIModule m(package("newer")); }) ==
        "AOTIModule: package '" + package("newer") +
            "': its metadata format is 2; this library reads format 1 (export it with this version's tensorclass.export, "
            "or update the library)");
  CHECK(message_of([&] { tnn::AOTIModule m(package("plain")); }) ==
        "AOTIModule: package '" + package("plain") +
            "': no \"tensorclass\" metadata: export it with tensorclass.export.export()");
  CHECK(message_of([&] { tnn::AOTIModule m(package("absent")); }) ==
        "AOTIModule: package '" + package("absent") + "' is not a file");
  CHECK(message_of([&] { tnn::AOTIModule m(packages()); }) == "AOTIModule: package '" + packages() + "' is not a file");
  // Not zip archives: refused by the entry check, before torch's loader.
  CHECK_THROWS_AS(tnn::AOTIModule(package("truncated")), tensordict::RuntimeError);
  CHECK(message_of([&] { tnn::AOTIModule m(package("truncated")); }) ==
        "AOTIModule: package '" + package("truncated") + "' cannot be read as a zip archive: it has no end record");
  CHECK(message_of([&] { tnn::AOTIModule m(package("garbage")); }) ==
        "AOTIModule: package '" + package("garbage") + "' cannot be read as a zip archive: it has no end record");
  CHECK(message_of([&] { tnn::AOTIModule m(package("mlp"), {.model_name = "other"}); })
            .rfind("AOTIModule: package '" + package("mlp") + "' cannot be read as an AOTInductor package (model 'other'): ",
                   0) == 0);
}

TEST_CASE("AOTIModule prints its package and keys", "[aoti]") {
  tnn::AOTIModule module(package("mlp"));
  CHECK(module->repr() == "AOTIModule(\n    package=" + package("mlp") +
                              ",\n    device=cpu,\n    in_keys=['obs'],\n    out_keys=['action'])");
}

// ---- live weights: from_module / to_module of an exported package ----

namespace {

// Every weight of `got` equals `expected`'s exactly (same keys, same values).
void check_same_weights(const TensorDict& got, const TensorDict& expected) {
  CHECK(got.keys({.include_nested = true, .leaves_only = true}) ==
        expected.keys({.include_nested = true, .leaves_only = true}));
  for (const auto& key : expected.keys({.include_nested = true, .leaves_only = true})) {
    INFO("key " << key.repr());
    CHECK(torch::equal(got.get(key), expected.get(key)));
  }
}

}  // namespace

TEST_CASE("from_module of an exported MLP gives Python's TensorDict.from_module, keys and values", "[aoti][weights]") {
  tnn::AOTIModule module(package("mlp"));
  CHECK(module->spec().swappable_weights);
  CHECK(module->spec().interaction_type == "deterministic");
  REQUIRE(module->spec().weights.size() == 4);
  CHECK(module->spec().weights[0].key == NestedKey{"module", "0", "weight"});
  CHECK(module->spec().weights[0].fqn == "module.0.weight");
  CHECK(module->spec().weights[0].shape == std::vector<int64_t>{16, 3});
  const TensorDict params = tnn::from_module(module);
  check_same_weights(params, load("mlp_params"));
  CHECK(params.batch_size().empty());
  // Copies: writing into them changes nothing in the package.
  params.get({"module", "0", "weight"}).zero_();
  check_same_weights(tnn::from_module(module), load("mlp_params"));
}

TEST_CASE("to_module loads a learner's weights into a running package: Python eager's outputs, to 1e-5",
          "[aoti][weights]") {
  tnn::AOTIModule module(package("mlp"));
  const TensorDict original = tnn::from_module(module);
  {
    // Until the guard goes: the new weights.
    tnn::ToModuleGuard guard = tnn::to_module(module, load("mlp_new_params"));
    check_equal(module(load("mlp_inputs")), load("mlp_expected_new"));
    check_same_weights(tnn::from_module(module), load("mlp_new_params"));
  }
  check_equal(module(load("mlp_inputs")), load("mlp_expected"));
  check_same_weights(tnn::from_module(module), original);

  // release(): for good. The member form, as tensordict spells it.
  load("mlp_new_params").to_module(module).release();
  check_equal(module(load("mlp_inputs")), load("mlp_expected_new"));
  // The weights as a learner sends them may be views of one storage
  // (consolidated) or on another dtype's storage: they are copied as they are.
  original.consolidate().to_module(module).release();
  check_equal(module(load("mlp_inputs")), load("mlp_expected"));

  // A partial update, when asked: the other weights stay.
  const TensorDict fresh = load("mlp_new_params");
  TensorDict first_layer = fresh.select({{"module", "0"}});
  {
    auto guard = tnn::to_module(module, first_layer, {.partial = true});
    TensorDict mixed = original.clone();
    mixed.update(first_layer);
    check_same_weights(tnn::from_module(module), mixed);
  }
  check_same_weights(tnn::from_module(module), original);
}

TEST_CASE("to_module guards restore what each replaced, in any order", "[aoti][weights]") {
  tnn::AOTIModule module(package("mlp"));
  const TensorDict original = tnn::from_module(module);
  const TensorDict a = load("mlp_new_params");
  const TensorDict b = original.apply([](const at::Tensor& t) { return t * 2; });
  {
    auto first = std::make_optional(tnn::to_module(module, a));
    auto second = std::make_optional(tnn::to_module(module, b));
    check_same_weights(tnn::from_module(module), b);
    second.reset();  // back to a (a swap)
    check_same_weights(tnn::from_module(module), a);
    second.emplace(tnn::to_module(module, b));
    first.reset();  // out of order: first puts back what it replaced, the original
    check_same_weights(tnn::from_module(module), original);
    second.reset();  // and second what it replaced: a
    check_same_weights(tnn::from_module(module), a);
  }
  check_equal(module(load("mlp_inputs")), load("mlp_expected_new"));
}

TEST_CASE("to_module of an exported Gaussian policy, on a TensorDict and on a generated struct", "[aoti][weights]") {
  tnn::AOTIModule gaussian(package("gaussian"));
  check_same_weights(tnn::from_module(gaussian), load("gaussian_params"));
  load("gaussian_new_params").to_module(gaussian).release();
  check_equal(gaussian(load("gaussian_inputs")), load("gaussian_expected_new"));

  tnn::AOTIModule typed(package("typed"));
  tnn::to_module(typed, load("typed_new_params")).release();
  deploy::PolicyStep step({.obs = load("typed_inputs").get("obs")}, {6});
  typed(step);
  CHECK(torch::allclose(step.action, load("typed_expected_new").get("action"), 1e-5, 1e-5));
  CHECK(torch::allclose(step.action_log_prob, load("typed_expected_new").get("action_log_prob"), 1e-5, 1e-5));
}

TEST_CASE("an exported policy inside a C++ TensorDictSequential is updated with the rest", "[aoti][weights]") {
  tnn::AOTIModule exported(package("mlp"));
  tnn::TensorDictSequential chain(
      {exported, tnn::TensorDictModule(torch::nn::Linear(2, 2), {"action"}, {"value"})});
  const TensorDict params = tnn::from_module(chain);
  // The package's weights sit where its module does: module.0 (the
  // sequence's first), as in Python's from_module of the same sequence.
  check_same_weights(params.get_td({"module", "0"}), load("mlp_params"));
  CHECK(params.contains({"module", "1", "module", "weight"}));
  TensorDict update = params.clone();
  update.set({"module", "0"}, load("mlp_new_params"));
  update.set({"module", "1", "module", "weight"}, torch::eye(2));
  update.set({"module", "1", "module", "bias"}, torch::zeros({2}));
  {
    auto guard = update.to_module(chain);
    TensorDict out = chain(load("mlp_inputs"));
    check_equal(out, load("mlp_expected_new"));
    CHECK(torch::allclose(out.get("value"), out.get("action")));
  }
  check_equal(chain(load("mlp_inputs")), load("mlp_expected"));
}

TEST_CASE("a C++ policy of the same structure takes the Python learner's weights the same way", "[aoti][weights]") {
  // Python: TensorDictModule(Sequential(Linear(3, 16), Tanh(), Linear(16, 2))).
  tnn::TensorDictModule policy(
      torch::nn::Sequential(torch::nn::Linear(3, 16), torch::nn::Tanh(), torch::nn::Linear(16, 2)), {"obs"}, {"action"});
  CHECK(tnn::from_module(policy).keys({.include_nested = true, .leaves_only = true}) ==
        load("mlp_params").keys({.include_nested = true, .leaves_only = true}));
  load("mlp_new_params").to_module(policy).release();
  torch::NoGradGuard no_grad;
  check_equal(policy(load("mlp_inputs")), load("mlp_expected_new"));
}

TEST_CASE("to_module(AOTIModule): wrong weights are refused by key before anything changes",
          "[aoti][weights][errors]") {
  tnn::AOTIModule module(package("mlp"));
  const TensorDict original = tnn::from_module(module);
  const std::string name = "to_module(AOTIModule('" + package("mlp") + "')): ";
  const TensorDict good = load("mlp_new_params");

  // Missing (the first weight is right: still nothing changes).
  TensorDict missing = good.exclude({{"module", "2", "bias"}});
  CHECK_THROWS_AS((void)tnn::to_module(module, missing), KeyError);
  CHECK(message_of([&] { (void)tnn::to_module(module, missing); }) ==
        name + "params have no weight ('module', '2', 'bias') (the package takes all 4 of its weights; "
               "{.partial = true} keeps the others)");
  // Unknown.
  TensorDict extra = good.clone();
  extra.set({"module", "3", "weight"}, torch::zeros({2}));
  CHECK_THROWS_AS((void)tnn::to_module(module, extra), KeyError);
  CHECK(message_of([&] { (void)tnn::to_module(module, extra); }) ==
        name + "the package has no weight ('module', '3', 'weight')");
  CHECK(message_of([&] { (void)tnn::to_module(module, extra, {.partial = true}); }) ==
        name + "the package has no weight ('module', '3', 'weight')");
  // Wrong shape, dtype, device; not a tensor.
  TensorDict wide = good.clone();
  wide.set({"module", "2", "weight"}, torch::zeros({2, 17}));
  CHECK_THROWS_AS((void)tnn::to_module(module, wide), tensordict::ValueError);
  CHECK(message_of([&] { (void)tnn::to_module(module, wide); }) ==
        name + "weight ('module', '2', 'weight') has shape [2, 17], the package's is [2, 16]");
  TensorDict doubles = good.apply([](const at::Tensor& t) { return t.to(torch::kDouble); });
  CHECK_THROWS_AS((void)tnn::to_module(module, doubles), tensordict::TypeError);
  CHECK(message_of([&] { (void)tnn::to_module(module, doubles); }) ==
        name + "weight ('module', '0', 'weight') has dtype float64, the package's is float32");
  // (a tensordict without a device: one with a device would move the value)
  TensorDict meta({{{"module", "0", "weight"}, good.get({"module", "0", "weight"})},
                   {{"module", "0", "bias"}, torch::empty({16}, torch::TensorOptions().device(torch::kMeta))},
                   {{"module", "2", "weight"}, good.get({"module", "2", "weight"})},
                   {{"module", "2", "bias"}, good.get({"module", "2", "bias"})}});
  CHECK_THROWS_AS((void)tnn::to_module(module, meta), tensordict::RuntimeError);
  CHECK(message_of([&] { (void)tnn::to_module(module, meta); }) ==
        name + "weight ('module', '0', 'bias') is on meta, the package runs on cpu (or give it on the cpu)");
  TensorDict text = good.clone();
  text.set_non_tensor({"module", "0", "bias"}, "zero");
  CHECK_THROWS_AS((void)tnn::to_module(module, text), tensordict::TypeError);
  CHECK(message_of([&] { (void)tnn::to_module(module, text); }) ==
        name + "params' ('module', '0', 'bias') is not a tensor");
  // Nothing changed.
  check_same_weights(tnn::from_module(module), original);
  check_equal(module(load("mlp_inputs")), load("mlp_expected"));

  // A package whose weights were folded into its code is refused, saying how
  // to export it.
  tnn::AOTIModule folded(package("folded"));
  const std::string how = "' was exported without swappable weights, so some are folded into its code; export it "
                          "again with tensorclass.export.export(..., swappable_weights=True) (the default) to update "
                          "its weights";
  CHECK_THROWS_AS((void)tnn::to_module(folded, good), tensordict::RuntimeError);
  CHECK(message_of([&] { (void)tnn::to_module(folded, good); }) ==
        "to_module(AOTIModule): package '" + package("folded") + how);
  CHECK(message_of([&] { tnn::from_module(folded); }) ==
        "from_module(AOTIModule): package '" + package("folded") + how);
}

TEST_CASE("to_module while another thread runs the module: every call sees old or new weights whole",
          "[aoti][weights][threads]") {
  tnn::AOTIModule module(package("mlp"));
  const TensorDict a = tnn::from_module(module);
  const TensorDict b = load("mlp_new_params");
  const at::Tensor obs = load("mlp_inputs").get("obs");
  const at::Tensor out_a = load("mlp_expected").get("action");
  const at::Tensor out_b = load("mlp_expected_new").get("action");
  REQUIRE(!torch::allclose(out_a, out_b, 1e-3, 1e-3));

  std::atomic<bool> stop{false};
  std::atomic<int64_t> calls{0}, saw_a{0}, saw_b{0}, mixed{0};
  std::thread actor([&] {
    while (!stop) {
      const at::Tensor action = module->run_tensors({obs})[0];
      if (torch::allclose(action, out_a, 1e-5, 1e-5)) {
        ++saw_a;
      } else if (torch::allclose(action, out_b, 1e-5, 1e-5)) {
        ++saw_b;
      } else {
        ++mixed;
      }
      ++calls;
    }
  });
  int64_t updates = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until) {
    (updates % 2 == 0 ? b : a).to_module(module).release();
    ++updates;
  }
  stop = true;
  actor.join();
  INFO(calls << " calls, " << updates << " updates: " << saw_a << " old, " << saw_b << " new, " << mixed << " mixed");
  CHECK(mixed == 0);
  CHECK(saw_a > 0);
  CHECK(saw_b > 0);
  CHECK(updates > 10);
}

TEST_CASE("an exploring policy: the interaction type given to tensorclass.export is baked into the package",
          "[aoti][weights]") {
  tnn::AOTIModule random(package("gaussian_random"));
  CHECK(random->spec().interaction_type == "random");
  // The guard does not change a package's behaviour: the action is a sample,
  // not the mean, with Normal's log-probability.
  tnn::InteractionTypeGuard mode(tnn::InteractionType::MODE);
  TensorDict td = random(load("gaussian_inputs"));
  const at::Tensor loc = td.get("loc"), scale = td.get("scale"), action = td.get("action");
  CHECK(!torch::allclose(action, loc, 1e-3, 1e-3));
  const at::Tensor log_prob = -((action - loc) / scale).pow(2) / 2 - scale.log() - 0.5 * std::log(2 * M_PI);
  CHECK(torch::allclose(td.get("action_log_prob"), log_prob, 1e-4, 1e-4));
  TensorDict again = random(load("gaussian_inputs"));
  CHECK(!torch::equal(again.get("action"), action));
}

TEST_CASE("a CUDA package takes CPU weights (one host-to-device copy each)", "[aoti][weights][cuda]") {
  if (!at::hasCUDA() || !std::filesystem::exists(package("mlp_cuda"))) {
    WARN("no CUDA device: the CUDA package is exported and updated on GPU machines only");
    return;
  }
  tnn::AOTIModule module(package("mlp_cuda"));
  CHECK(module->spec().device_type == "cuda");
  const at::Device cuda(at::kCUDA, 0);
  TensorDict inputs = load("mlp_inputs").to(cuda);
  CHECK(torch::allclose(module(inputs).get("action").cpu(), load("mlp_expected").get("action"), 1e-5, 1e-5));
  const TensorDict cpu_weights = load("mlp_new_params");
  const auto start = std::chrono::steady_clock::now();
  cpu_weights.to_module(module).release();
  const auto took = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  WARN("to_module of CPU weights into the CUDA package: " << took << " us");
  check_same_weights(tnn::from_module(module).to(at::kCPU), cpu_weights);
  CHECK(torch::allclose(module(load("mlp_inputs").to(cuda)).get("action").cpu(),
                        load("mlp_expected_new").get("action"), 1e-5, 1e-5));
  // Weights already on the device go as they are.
  load("mlp_params").to(cuda).to_module(module).release();
  CHECK(torch::allclose(module(load("mlp_inputs").to(cuda)).get("action").cpu(), load("mlp_expected").get("action"),
                        1e-5, 1e-5));
}

TEST_CASE("a package with constants of its own folds them again after each update", "[aoti][weights]") {
  tnn::AOTIModule mlp(package("mlp"));
  CHECK(!mlp->spec().runtime_folding);  // weights only: an update is a copy
  tnn::AOTIModule scaled(package("scaled"));
  CHECK(scaled->spec().runtime_folding);
  check_equal(scaled(load("scaled_inputs")), load("scaled_expected"));
  {
    auto guard = load("scaled_new_params").to_module(scaled);
    check_equal(scaled(load("scaled_inputs")), load("scaled_expected_new"));
  }
  check_equal(scaled(load("scaled_inputs")), load("scaled_expected"));
}

TEST_CASE("AOTIModule: entries that would land outside the loader's directory are refused before extraction",
          "[aoti][errors][hostile]") {
  const std::filesystem::path probe = "/tmp/tensorclass_zip_slip_probe";
  std::filesystem::remove(probe);
  const std::string tail = "; the loader extracts entries by name under a temporary directory, so the package is "
                           "refused before anything is extracted";
  const std::string climbing = "data/aotinductor/model/../../../../../../../../../../../../tmp/tensorclass_zip_slip_probe";
  CHECK_THROWS_AS(tnn::AOTIModule(package("climbing")), tensordict::RuntimeError);
  CHECK(message_of([&] { tnn::AOTIModule m(package("climbing")); }) ==
        "AOTIModule: package '" + package("climbing") + "' has an entry '" + climbing +
            "' that climbs out of the directory it is extracted to (a '..' part)" + tail);
  CHECK(message_of([&] { tnn::AOTIModule m(package("absolute")); }) ==
        "AOTIModule: package '" + package("absolute") +
            "' has an entry '/tmp/tensorclass_zip_slip_probe' that is an absolute path" + tail);
  CHECK(message_of([&] { tnn::AOTIModule m(package("linked")); }) ==
        "AOTIModule: package '" + package("linked") + "' has an entry 'data/aotinductor/model/link' that is a symbolic link" +
            tail);
  CHECK(!std::filesystem::exists(probe));
  // A package the metadata check refuses is refused before extraction too:
  // its metadata is read from the archive, then the loader runs.
  CHECK(message_of([&] { tnn::AOTIModule m(package("newer")); }).find("its metadata format is 2") != std::string::npos);
}

TEST_CASE("AOTIModule: outputs are checked against the metadata, and an out_key that is an in_key replaces the input",
          "[aoti][errors]") {
  tnn::AOTIModule mislabelled(package("mislabelled"));
  TensorDict td = load("mlp_inputs");
  CHECK_THROWS_AS(mislabelled(td), tensordict::RuntimeError);
  CHECK(message_of([&] { mislabelled(td); }) ==
        "AOTIModule('" + package("mislabelled") +
            "'): output 'action' is float32[7, 2]; the package's metadata says float32[*, 3] at batch [7]");
  CHECK(!td.contains("action"));

  // As tensordict's TensorDictModule(in_keys=["obs"], out_keys=["obs"]).
  tnn::AOTIModule in_place(package("in_place"));
  CHECK(in_place->out_keys() == tnn::Keys{"obs"});
  TensorDict replaced = in_place(load("mlp_inputs"));
  CHECK(torch::allclose(replaced.get("obs"), load("mlp_expected").get("action"), 1e-5, 1e-5));
}

TEST_CASE("update_weights writes new weights straight into the package's inactive buffer", "[aoti][weights]") {
  tnn::AOTIModule module(package("mlp"));
  const TensorDict original = tnn::from_module(module);
  const TensorDict fresh = load("mlp_new_params");
  // As tensordict::recv(params, group, src) does: into the given tensors.
  module->update_weights([&](const TensorDict& params) {
    CHECK(params.keys({.include_nested = true, .leaves_only = true}) ==
          fresh.keys({.include_nested = true, .leaves_only = true}));
    for (const auto& key : fresh.keys({.include_nested = true, .leaves_only = true})) {
      params.get(key).copy_(fresh.get(key));
    }
  });
  check_equal(module(load("mlp_inputs")), load("mlp_expected_new"));
  check_same_weights(tnn::from_module(module), fresh);

  // A write that replaces a tensor is refused by key; one that throws: nothing changes.
  // (a handle: a copy of it writes into the same entries)
  const auto replace = [](TensorDict params) { params.set({"module", "2", "bias"}, torch::zeros({2})); };
  CHECK_THROWS_AS(module->update_weights(replace), tensordict::ValueError);
  CHECK(message_of([&] { module->update_weights(replace); }) == "update_weights(AOTIModule('" + package("mlp") +
                  "')): the update replaced weight ('module', '2', 'bias') instead of writing into it (nothing was "
                  "loaded)");
  CHECK_THROWS_AS(module->update_weights([](const TensorDict& params) {
    params.get({"module", "0", "weight"}).zero_();
    throw std::runtime_error("the learner went away");
  }), std::runtime_error);
  check_same_weights(tnn::from_module(module), fresh);
  check_equal(module(load("mlp_inputs")), load("mlp_expected_new"));

  // Back, then a guard's restore still puts back what it replaced.
  {
    auto guard = original.to_module(module);
    module->update_weights([&](const TensorDict& params) {
      for (const auto& key : fresh.keys({.include_nested = true, .leaves_only = true})) {
        params.get(key).copy_(fresh.get(key) * 2);
      }
    });
  }
  check_same_weights(tnn::from_module(module), fresh);
}
