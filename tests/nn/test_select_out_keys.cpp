// select_out_keys / reset_out_keys on TensorDictModule and
// TensorDictSequential, and the output-tensordict form of a sequence.
#include "three_outputs.h"

using td_test::a0_b1;
using td_test::sorted_keys;
using td_test::three_outputs;

namespace {

// a, b -> c (a + 2), then b -> d (b + 2), e (b).
tnn::TensorDictSequential two_step_sequence() {
  return tnn::TensorDictSequential({
      tnn::TensorDictModule([](const at::Tensor& x) { return x + 2; }, {"a"}, {"c"}),
      tnn::TensorDictModule([](const at::Tensor& x) { return std::make_pair(x + 2, x); }, {"b"}, {"d", "e"}),
  });
}

float value(const TensorDict& td, const NestedKey& key) { return td.get(key).item<float>(); }

}  // namespace

// ports test_nn.py::TestSelectOutKeys::test_tdmodule
TEST_CASE("TensorDictModule::select_out_keys writes only the selected keys, reset_out_keys undoes it",
          "[module][select]") {
  const std::vector<tnn::Keys> selections{{"d", "e"}, {"d"}};
  for (const auto& selection : selections) {
    auto mod = three_outputs();
    CHECK(mod->out_keys() == tnn::Keys{"c", "d", "e"});
    CHECK(sorted_keys(mod(a0_b1())) == std::vector<NestedKey>{"a", "b", "c", "d", "e"});
    auto& mod2 = mod->select_out_keys(selection);
    CHECK(&mod2 == mod.get());
    CHECK(mod->out_keys() == selection);
    CHECK(mod->out_keys_source() == tnn::Keys{"c", "d", "e"});
    TensorDict td = a0_b1();
    TensorDict out = mod(td);
    CHECK(out.impl() == td.impl());
    CHECK_FALSE(td.contains("c"));
    CHECK(td.contains("e") == (selection.size() == 2));
    CHECK(value(td, "d") == 3.0f);  // b + 2
    CHECK(value(td, "a") == 0.0f);
    CHECK(value(td, "b") == 1.0f);
    auto& mod3 = mod->reset_out_keys();
    CHECK(&mod3 == mod.get());
    CHECK(mod->out_keys() == tnn::Keys{"c", "d", "e"});
    CHECK(sorted_keys(mod(a0_b1())) == std::vector<NestedKey>{"a", "b", "c", "d", "e"});
  }
}

// ports test_nn.py::TestSelectOutKeys::test_tdmodule (unpack=False)
TEST_CASE("TensorDictModule::select_out_keys errors", "[module][select][errors]") {
  auto mod = three_outputs();
  // the keys passed as one key, tensordict's `select_out_keys(("d", "e"))`
  CHECK(message_of([&] {
          mod->select_out_keys({{"d", "e"}});
        }) ==
        "Can't select non existent key: ('d', 'e'). Are you passing the keys in a list? Try unpacking as: `d, e`");
  CHECK_THROWS_AS(mod->select_out_keys({{"d", "e"}}), std::invalid_argument);
  CHECK(message_of([&] { mod->select_out_keys({"z"}); }) == "Can't select non existent key: z. ");
  CHECK(message_of([&] { mod->select_out_keys({"c", "z"}); }) == "Some keys are not part of the module out_keys.");
  CHECK_THROWS_AS(mod->select_out_keys({"c", "z"}), std::runtime_error);
  CHECK(mod->out_keys() == tnn::Keys{"c", "d", "e"});  // unchanged
  // a selection narrows: selecting again picks among the selected keys
  mod->select_out_keys({"d"});
  CHECK(message_of([&] { mod->select_out_keys({"c"}); }) == "Can't select non existent key: c. ");
}

TEST_CASE("TensorDictModule::select_out_keys keeps the caller's other keys", "[module][select]") {
  // tensordict's hook runs tensordict_out.select(*in_keys, *out_keys, inplace=True)
  // (common.py:442), deleting "extra"; here the input keeps every key it had,
  // and its leaves take the values the module gave them.
  auto mod = three_outputs();
  mod->select_out_keys({"d"});
  TensorDict td = a0_b1();
  td.set("extra", torch::full({}, 7.0));
  td.set("c", torch::full({}, 42.0));  // a non-selected out_key already there
  mod(td);
  CHECK(sorted_keys(td) == std::vector<NestedKey>{"a", "b", "c", "d", "extra"});
  CHECK(value(td, "extra") == 7.0f);
  CHECK(value(td, "c") == 2.0f);  // the module's a + 2, as a sequence updates its input's leaves
  CHECK(value(td, "d") == 3.0f);

  // with an output tensordict, only the selected keys reach it
  TensorDict input = a0_b1();
  TensorDict out;
  mod->forward(input, out);
  CHECK(sorted_keys(out) == std::vector<NestedKey>{"d"});
  CHECK(sorted_keys(input) == std::vector<NestedKey>{"a", "b"});
}

// ports test_nn.py::TestSelectOutKeys::test_tdmodule_dispatch
TEST_CASE("TensorDictModule::select_out_keys with the tensor-call form", "[module][select]") {
  for (const tnn::Keys& selection : {tnn::Keys{"d", "e"}, tnn::Keys{"d"}, tnn::Keys{"e", "c"}}) {
    td_test::check_dispatch_selection(three_outputs(), selection);
  }
}

// ports test_nn.py::TestSelectOutKeys::test_tdseq
TEST_CASE("TensorDictSequential::select_out_keys drops the other outputs, reset_out_keys undoes it",
          "[sequential][select]") {
  const std::vector<tnn::Keys> selections{{"d", "e"}, {"d"}};
  for (const auto& selection : selections) {
    auto mod = two_step_sequence();
    CHECK(sorted_keys(mod(a0_b1())) == std::vector<NestedKey>{"a", "b", "c", "d", "e"});
    auto& mod2 = mod->select_out_keys(selection);
    CHECK(&mod2 == mod.get());
    CHECK(mod->out_keys() == selection);
    TensorDict td = a0_b1();
    CHECK(mod(td).impl() == td.impl());
    CHECK_FALSE(td.contains("c"));
    CHECK(td.contains("e") == (selection.size() == 2));
    CHECK(value(td, "d") == 3.0f);
    mod->reset_out_keys();
    CHECK(mod->out_keys() == tnn::Keys{"c", "d", "e"});
    CHECK(sorted_keys(mod(a0_b1())) == std::vector<NestedKey>{"a", "b", "c", "d", "e"});
  }
  auto mod = two_step_sequence();
  CHECK(message_of([&] {
          mod->select_out_keys({{"d", "e"}});
        }) == "All keys in selected_out_keys must be in out_keys.");
  CHECK_THROWS_AS(mod->select_out_keys({"d", "z"}), std::invalid_argument);
  CHECK(mod->out_keys() == tnn::Keys{"c", "d", "e"});
}

// ports test_nn.py::TestSelectOutKeys::test_tdseq_dispatch
TEST_CASE("TensorDictSequential::select_out_keys with the tensor-call form", "[sequential][select]") {
  auto mod = two_step_sequence();
  auto res = mod(torch::zeros({}), torch::ones({}));
  REQUIRE(res.size() == 3);
  CHECK(res[0].item<float>() == 2.0f);
  CHECK(res[1].item<float>() == 3.0f);
  CHECK(res[2].item<float>() == 1.0f);
  mod->select_out_keys({"e"});
  res = mod(torch::zeros({}), torch::ones({}));
  REQUIRE(res.size() == 1);
  CHECK(res[0].item<float>() == 1.0f);
}

// ports test_nn.py::TestTDSequence::test_ordered_dict_select_outkeys
TEST_CASE("TensorDictSequential::select_out_keys drops intermediate keys", "[sequential][select]") {
  tnn::TensorDictSequential seq(tnn::NamedModules{
      {"layer0", tnn::TensorDictModule([](const at::Tensor& x) { return x + 1; }, {"x"}, {"intermediate"})},
      {"layer1", tnn::TensorDictModule([](const at::Tensor& x) { return x - 1; }, {"intermediate"}, {"z"})},
      {"layer2",
       tnn::TensorDictModule([](const at::Tensor& x, const at::Tensor& y) { return x + y; }, {"x", "z"}, {"a"})},
  });
  CHECK(seq->size() == 3);
  seq->select_out_keys({"z", "a"});
  TensorDict td({{"x", torch::full({}, 3.0)}}, {});
  seq(td);
  CHECK_FALSE(td.contains("intermediate"));
  CHECK(value(td, "z") == 3.0f);  // (x + 1) - 1
  CHECK(value(td, "a") == 6.0f);  // x + z
}

TEST_CASE("TensorDictSequential::select_out_keys: nested intermediates dropped, nested input keys kept",
          "[sequential][select]") {
  tnn::TensorDictSequential seq({
      tnn::TensorDictModule([](const at::Tensor& x) { return x * 2; }, {"a"}, {{"n", "b"}}),
      tnn::TensorDictModule([](const at::Tensor& x) { return x + 1; }, {{"n", "b"}}, {{"n", "c"}}),
  });
  seq->select_out_keys({{"n", "c"}});
  TensorDict td({{"a", torch::full({}, 5.0)}, {{"n", "keep"}, torch::zeros({})}}, {});
  seq(td);
  CHECK(sorted_keys(td) == std::vector<NestedKey>{"a", {"n", "c"}, {"n", "keep"}});
  CHECK(value(td, {"n", "c"}) == 11.0f);
}

// ports test_nn.py::TestTDSequence::test_key_exclusion_constructor
TEST_CASE("TensorDictSequential's selected_out_keys constructor argument", "[sequential][select]") {
  auto add = [](const at::Tensor& x, const at::Tensor& y) { return x + y; };
  tnn::TensorDictModule module1(add, {"key1", "key2"}, {"foo1"});
  tnn::TensorDictModule module2(add, {"key1", "key3"}, {"key1"});
  tnn::TensorDictModule module3(add, {"foo1", "key3"}, {"key2"});
  tnn::TensorDictSequential seq({module1, module2, module3}, {.selected_out_keys = {"key2"}});
  CHECK(seq->in_keys() == tnn::Keys{"key1", "key2", "key3"});
  CHECK(seq->out_keys() == tnn::Keys{"key2"});
  CHECK(seq->out_keys_source() == tnn::Keys{"foo1", "key1", "key2"});

  // ports test_nn.py::TestTDSequence::test_key_exclusion_constructor_exec
  TensorDict td({{"key1", torch::zeros({})}, {"key2", torch::zeros({})}, {"key3", torch::ones({})}}, {});
  TensorDict out = seq(td);
  CHECK(out.impl() == td.impl());
  CHECK(sorted_keys(td) == std::vector<NestedKey>{"key1", "key2", "key3"});
  CHECK(value(td, "key2") == 1.0f);  // foo1 (0 + 0) + key3
  CHECK(value(td, "key1") == 1.0f);  // overwritten by module2 (0 + 1): input leaves take the new values

  CHECK(message_of([&] { tnn::TensorDictSequential({module1}, {.selected_out_keys = {"key2"}}); }) ==
        "All keys in selected_out_keys must be in out_keys.");
  CHECK_THROWS_AS(tnn::TensorDictSequential({module1}, {.selected_out_keys = {"key2"}}), std::invalid_argument);
}

namespace {
// test_key_exclusion_constructor's chain on [2]-shaped leaves: foo1 = key1 +
// key2, then key1 = key1 + key3 (overwriting an input), then key2 = foo1 +
// key3 (overwriting another).
tnn::TensorDictSequential key_exclusion_chain(tnn::Keys selected, tnn::Inplace inplace) {
  auto add = [](const at::Tensor& x, const at::Tensor& y) { return x + y; };
  return tnn::TensorDictSequential(
      {tnn::TensorDictModule(add, {"key1", "key2"}, {"foo1"}), tnn::TensorDictModule(add, {"key1", "key3"}, {"key1"}),
       tnn::TensorDictModule(add, {"foo1", "key3"}, {"key2"})},
      {.selected_out_keys = std::move(selected), .inplace = inplace});
}

TensorDict key1_key2_key3() {
  return TensorDict({{"key1", torch::full({2}, 1.0)}, {"key2", torch::full({2}, 2.0)}, {"key3", torch::full({2}, 3.0)}},
                    {2}, at::Device(at::kCPU));
}
}  // namespace

TEST_CASE(
    "TensorDictSequential inplace=False/\"empty\" with a selection returns the new tensordict holding the selected "
    "keys",
    "[sequential][select][inplace]") {
  // sequence.py:625-657: the chain runs on a shallow copy and only the
  // selected keys reach the inplace target, which is returned; the input is
  // left alone.
  const TensorDict original = key1_key2_key3();
  const at::Tensor key2 = (original.get("key1") + original.get("key2")) + original.get("key3");
  for (const tnn::Inplace inplace : {tnn::Inplace::False, tnn::Inplace::Empty}) {
    INFO("inplace " << static_cast<int>(inplace));
    auto seq = key_exclusion_chain({"key2"}, inplace);
    TensorDict td = key1_key2_key3();
    const TensorDict out = seq(td);
    CHECK(out.impl() != td.impl());
    CHECK(sorted_keys(out) == std::vector<NestedKey>{"key2"});
    CHECK(torch::equal(out.get("key2"), key2));
    if (inplace == tnn::Inplace::Empty) {
      CHECK(out.batch_size().vec() == std::vector<int64_t>{2});
      CHECK(out.device() == at::Device(at::kCPU));
    } else {
      CHECK(out.batch_size().empty());
      CHECK_FALSE(out.device().has_value());
    }
    CHECK(sorted_keys(td) == std::vector<NestedKey>{"key1", "key2", "key3"});
    for (const char* key : {"key1", "key2", "key3"}) CHECK(torch::equal(td.get(key), original.get(key)));

    // The same through select_out_keys, undone by reset_out_keys.
    auto built = key_exclusion_chain({}, inplace);
    built->select_out_keys({"key2", "foo1"});
    const TensorDict selected = built(key1_key2_key3());
    CHECK(sorted_keys(selected) == std::vector<NestedKey>{"foo1", "key2"});
    CHECK(torch::equal(selected.get("foo1"), original.get("key1") + original.get("key2")));
    built->reset_out_keys();
    CHECK(sorted_keys(built(key1_key2_key3())) == std::vector<NestedKey>{"foo1", "key1", "key2"});

    // A given output tensordict prevails.
    TensorDict given;
    CHECK(seq(key1_key2_key3(), given).impl() == given.impl());
    CHECK(sorted_keys(given) == std::vector<NestedKey>{"key2"});
  }
}

TEST_CASE("TensorDictSequential inplace=True with a selection writes only the selected keys into the input",
          "[sequential][select][inplace]") {
  // sequence.py:656: tensordict_out (the input) is updated with the selected
  // keys only, so key1, overwritten on the copy the chain ran on, keeps its
  // value; with inplace=None the input's leaves take the new values
  // (test_key_exclusion_constructor_exec).
  const TensorDict original = key1_key2_key3();
  TensorDict td = key1_key2_key3();
  const TensorDict out = key_exclusion_chain({"key2"}, tnn::Inplace::True)(td);
  CHECK(out.impl() == td.impl());
  CHECK(sorted_keys(td) == std::vector<NestedKey>{"key1", "key2", "key3"});
  CHECK(torch::equal(td.get("key2"), (original.get("key1") + original.get("key2")) + original.get("key3")));
  CHECK(torch::equal(td.get("key1"), original.get("key1")));

  TensorDict td_none = key1_key2_key3();
  key_exclusion_chain({"key2"}, tnn::Inplace::None)(td_none);
  CHECK(torch::equal(td_none.get("key1"), original.get("key1") + original.get("key3")));
}

// ports test_nn.py::TestTDSequence::test_tdseq_tdoutput
TEST_CASE("TensorDictSequential with an output tensordict and a selection", "[sequential][select]") {
  auto mod = two_step_sequence();
  TensorDict inp = a0_b1();
  TensorDict out;
  TensorDict out2 = mod(inp, out);
  CHECK(out2.impl() == out.impl());
  CHECK(sorted_keys(out) == std::vector<NestedKey>{"c", "d", "e"});
  CHECK(sorted_keys(inp) == std::vector<NestedKey>{"a", "b"});
  mod->select_out_keys({"d"});
  TensorDict out3;
  CHECK(mod(inp, out3).impl() == out3.impl());
  CHECK(sorted_keys(out3) == std::vector<NestedKey>{"d"});
  CHECK(value(out3, "d") == 3.0f);
  CHECK(sorted_keys(inp) == std::vector<NestedKey>{"a", "b"});
}

TEST_CASE("ProbabilisticTensorDictSequential with an output tensordict writes only its out_keys there",
          "[probabilistic][sequential]") {
  // tensordict's ProbabilisticTensorDictSequential.forward follows the
  // sequence's rule (probabilistic.py:1520-1558).
  tnn::ProbabilisticTensorDictSequential policy({
      tnn::TensorDictModule([](const at::Tensor& x) { return std::make_pair(x + 1, torch::ones_like(x)); }, {"obs"},
                            {"loc", "scale"}),
      tnn::ProbabilisticTensorDictModule(tnn::Keys{"loc", "scale"}, {"action"},
                                         tnn::ProbabilisticOptions{.distribution = tnn::Normal::cls()}),
  });
  TensorDict td({{"obs", torch::arange(3.0)}}, {3});
  TensorDict out({}, {3});
  {
    tnn::InteractionTypeGuard mode(tnn::InteractionType::MODE);
    CHECK(policy(td, out).impl() == out.impl());
  }
  CHECK(sorted_keys(td) == std::vector<NestedKey>{"obs"});
  CHECK(sorted_keys(out) == std::vector<NestedKey>{"action", "loc", "scale"});
  CHECK(torch::equal(out.get("action"), torch::arange(3.0) + 1));  // a Normal's mode is its loc

  TensorDict params({}, {3});
  policy->get_dist_params(td, params);
  CHECK(sorted_keys(td) == std::vector<NestedKey>{"obs"});
  CHECK(sorted_keys(params) == std::vector<NestedKey>{"loc", "scale"});

  policy->select_out_keys({"action"});
  TensorDict selected({}, {3});
  policy(td, selected);
  CHECK(sorted_keys(selected) == std::vector<NestedKey>{"action"});
  policy(td);
  CHECK(sorted_keys(td) == std::vector<NestedKey>{"action", "obs"});
}

TEST_CASE("ProbabilisticTensorDictModule::select_out_keys drops the log-probability", "[probabilistic][select]") {
  auto make = [] {
    return tnn::ProbabilisticTensorDictModule(
        tnn::Keys{"loc", "scale"}, {"action"},
        tnn::ProbabilisticOptions{.distribution = tnn::Normal::cls(), .return_log_prob = true});
  };
  auto module = make();
  CHECK(module->out_keys() == tnn::Keys{"action", "action_log_prob"});
  module->select_out_keys({"action"});
  TensorDict td({{"loc", torch::full({2}, 3.0)}, {"scale", torch::ones({2})}}, {2});
  module(td);
  CHECK(sorted_keys(td) == std::vector<NestedKey>{"action", "loc", "scale"});
  CHECK(torch::equal(td.get("action"), torch::full({2}, 3.0)));  // the mode (the default interaction type)

  // as the last module of a sequence
  auto last = make();
  last->select_out_keys({"action"});
  tnn::ProbabilisticTensorDictSequential policy(
      {tnn::TensorDictModule([](const at::Tensor& x) { return std::make_pair(x, torch::ones_like(x)); }, {"obs"},
                             {"loc", "scale"}),
       last});
  CHECK(policy->out_keys() == tnn::Keys{"loc", "scale", "action"});
  TensorDict obs({{"obs", torch::zeros({2})}}, {2});
  policy(obs);
  CHECK(sorted_keys(obs) == std::vector<NestedKey>{"action", "loc", "obs", "scale"});
}
