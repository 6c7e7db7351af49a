// How a TensorDictModule reads its inputs: strict or not, and keyword
// arguments (tensordict's dict in_keys).
#include "nn_test.h"

namespace {

const std::string kNoneMessage =
    "Some tensors that are necessary for the module call may not have not been found in the input tensordict: "
    "the following inputs are None: ";

// The exception nested in `e` (std::throw_with_nested), or "".
std::string nested_message(const std::exception& e) {
  try {
    std::rethrow_if_nested(e);
  } catch (const std::exception& inner) {
    return inner.what();
  }
  return "";
}

}  // namespace

// ports test_nn.py::TestTDModule::test_strict
TEST_CASE("TensorDictModule strict=false passes a missing input as an undefined tensor", "[module][strict]") {
  bool b_was_undefined = false;
  auto check = [&](const at::Tensor& a, const at::Tensor& b) {
    b_was_undefined = !b.defined();
    return a;
  };
  tnn::TensorDictModule tdm(check, {"present", "missing"}, {"new_present"});
  CHECK_FALSE(tdm->strict());
  TensorDict td({{"present", torch::zeros({})}}, {});
  TensorDict tdout = tdm(td);
  CHECK(b_was_undefined);
  CHECK(tdout.get("new_present").is_same(td.get("present")));

  tnn::TensorDictModule strict(check, {"present", "missing"}, {"new_present"},
                               tnn::TensorDictModuleOptions{.strict = true});
  CHECK(strict->strict());
  TensorDict td2({{"present", torch::zeros({})}}, {});
  CHECK_THROWS_AS(strict(td2), KeyError);
  CHECK(message_of([&] { strict(td2); }) ==
        "TensorDictModule: input key(s) ['missing'] not found in the tensordict (in_keys=['present', 'missing'], "
        "tensordict keys=['present'])");
  CHECK_FALSE(td2.contains("new_present"));
}

TEST_CASE("TensorDictModule strict=false: a call failing on a missing input is a KeyError naming it",
          "[module][strict][errors]") {
  tnn::TensorDictModule add([](const at::Tensor& a, const at::Tensor& b) { return a + b; }, {"a", {"nested", "b"}},
                            {"c"});
  TensorDict td({{"a", torch::ones({3})}}, {3});
  CHECK(message_of([&] { add(td); }) == kNoneMessage + "{('nested', 'b')}.");
  try {
    add(td);
    FAIL("no exception");
  } catch (const KeyError& e) {
    // the original failure is nested (tensordict's `raise KeyError(...) from err`)
    CHECK_THAT(nested_message(e), Catch::Matchers::Contains("undefined"));
  }

  // a torch module too
  tnn::TensorDictModule linear(torch::nn::Linear(3, 2), {"x"}, {"y"});
  TensorDict empty({}, {});
  CHECK(message_of([&] { linear(empty); }) == kNoneMessage + "{'x'}.");
  CHECK_THROWS_AS(linear(empty), KeyError);

  // several missing inputs, in in_keys order
  tnn::TensorDictModule two([](const at::Tensor& a, const at::Tensor& b) { return a * b; }, {"p", "q"}, {"r"});
  CHECK(message_of([&] { two(empty); }) == kNoneMessage + "{'p', 'q'}.");

  // an undefined result passed through is the same failure
  tnn::TensorDictModule identity([](const at::Tensor& x) { return x; }, {"x"}, {"y"});
  CHECK(message_of([&] { identity(empty); }) == kNoneMessage + "{'x'}.");
  CHECK_FALSE(empty.contains("y"));

  // with every input present, a failure is the call's own
  tnn::TensorDictModule failing([](const at::Tensor&) -> at::Tensor { throw std::runtime_error("boom"); }, {"a"},
                                {"c"});
  CHECK(message_of([&] { failing(td); }) == "boom");
  CHECK_THROWS_AS(failing(td), std::runtime_error);
}

TEST_CASE("TensorDictSequential: a missing input reaches its module as an undefined tensor",
          "[sequential][strict][errors]") {
  tnn::TensorDictSequential seq({
      tnn::TensorDictModule([](const at::Tensor& a) { return a + 1; }, {"a"}, {"b"}),
      tnn::TensorDictModule([](const at::Tensor& b, const at::Tensor& z) { return z.defined() ? b + z : b * 10; },
                            {"b", "z"}, {"c"}),
  });
  TensorDict td({{"a", torch::ones({})}}, {});
  seq(td);
  CHECK(td.get("c").item<float>() == 20.0f);
}

// ports test_nn.py::TestTDModule::test_input_keys (dict in_keys, out_to_in_map=False)
TEST_CASE("TensorDictModule with a KeyMap {td key: kwarg name} (out_to_in_map=false)", "[module][kwargs]") {
  auto fn = [](const tnn::Kwargs& kw) {
    CHECK(kw["b"].defined());
    CHECK(kw["c"].defined());
    return kw["a"] + 1;
  };
  tnn::TensorDictModule module(fn, tnn::KeyMap{{"1", "a"}, {{"2", "smth"}, "b"}, {{"3", "other", "thing"}, "c"}}, {"a"},
                               tnn::TensorDictModuleOptions{.out_to_in_map = false});
  CHECK(module->in_keys() == tnn::Keys{"1", {"2", "smth"}, {"3", "other", "thing"}});
  REQUIRE(module->kwargs());
  CHECK(*module->kwargs() == std::vector<std::string>{"a", "b", "c"});
  TensorDict td(
      {{"1", torch::ones({1})}, {{"2", "smth"}, torch::ones({2})}, {{"3", "other", "thing"}, torch::ones({3})}}, {});
  CHECK(torch::equal(module(td).get("a"), torch::full({1}, 2.0)));

  // the positional form
  tnn::TensorDictModule positional([](const at::Tensor& a) { return a + 1; }, {"1"}, {"a"});
  CHECK_FALSE(positional->kwargs());
  TensorDict td2({{"1", torch::ones({1})}}, {});
  CHECK(torch::equal(positional(td2).get("a"), torch::full({1}, 2.0)));
}

// ports test_nn.py::TestTDModule::test_input_keys_dict_reversed
TEST_CASE("TensorDictModule with a KeyMap {kwarg name: td key} (out_to_in_map=true, the default)", "[module][kwargs]") {
  auto fn = [](const tnn::Kwargs& kw) { return kw["x"] + kw["y"]; };
  tnn::TensorDictModule module(fn, tnn::KeyMap{{"x", "1"}, {"y", "2"}}, {"a"},
                               tnn::TensorDictModuleOptions{.out_to_in_map = true});
  TensorDict td({{"1", torch::ones({1})}, {"2", torch::full({1}, 3.0)}}, {});
  CHECK(module(td).get("a").item<float>() == 4.0f);

  tnn::TensorDictModule by_default(fn, tnn::KeyMap{{"x", "1"}, {"y", "2"}}, {"a"});
  CHECK(by_default->in_keys() == tnn::Keys{"1", "2"});
  CHECK(*by_default->kwargs() == std::vector<std::string>{"x", "y"});
  TensorDict td2({{"1", torch::ones({1})}, {"2", torch::full({1}, 3.0)}}, {});
  CHECK(by_default(td2).get("a").item<float>() == 4.0f);
}

// ports test_nn.py::TestTDModule::test_input_keys_match_reversed
TEST_CASE("TensorDictModule: a KeyMap and its reverse with out_to_in_map flipped agree", "[module][kwargs]") {
  auto fn = [](const tnn::Kwargs& kw) { return kw["y"] - kw["x"]; };
  tnn::TensorDictModule module(fn, tnn::KeyMap{{"1", "x"}, {"2", "y"}}, {"a"},
                               tnn::TensorDictModuleOptions{.out_to_in_map = false});
  tnn::TensorDictModule reversed_module(fn, tnn::KeyMap{{"x", "1"}, {"y", "2"}}, {"a"},
                                        tnn::TensorDictModuleOptions{.out_to_in_map = true});
  TensorDict td({{"1", torch::ones({1})}, {"2", torch::full({1}, 3.0)}}, {});
  CHECK(module(td.clone()).get("a").item<float>() == 2.0f);
  CHECK(reversed_module(td.clone()).get("a").item<float>() == 2.0f);
}

// ports test_nn.py::TestTDModule::test_input_keys_wrong_mapping
TEST_CASE("TensorDictModule: a KeyMap read the wrong way names the arguments given", "[module][kwargs][errors]") {
  // tensordict: TypeError "got an unexpected keyword argument '1'"; a C++
  // function does not declare its argument names, so the lookup fails.
  auto fn = [](const tnn::Kwargs& kw) {
    const at::Tensor& x = kw["x"];
    return x + kw["y"];
  };
  for (bool out_to_in_map : {true, false}) {
    tnn::KeyMap in_keys = out_to_in_map ? tnn::KeyMap{{"1", "x"}, {"2", "y"}} : tnn::KeyMap{{"x", "1"}, {"y", "2"}};
    tnn::TensorDictModule module(fn, in_keys, {"a"}, tnn::TensorDictModuleOptions{.out_to_in_map = out_to_in_map});
    // tensordict's td: the keys read (x, y) are missing
    TensorDict td({{"1", torch::ones({1})}, {"2", torch::full({1}, 3.0)}}, {});
    CHECK(message_of([&] { module(td); }) == kNoneMessage + "{'x', 'y'}.");
    // with x and y present, the function asks for an argument that is not there
    TensorDict xy({{"x", torch::ones({1})}, {"y", torch::full({1}, 3.0)}}, {});
    CHECK(message_of([&] { module(xy); }) == "missing keyword argument 'x' (the keyword arguments are: '1', '2')");
    CHECK_THROWS_AS(module(xy), tensordict::TypeError);  // Python: TypeError (an unexpected keyword)
  }
}

// ports test_nn.py::TestTDModule::test_unused_out_to_in_map
TEST_CASE("TensorDictModule: out_to_in_map with a list of in_keys is refused", "[module][kwargs][errors]") {
  // tensordict warns; here it is an error.
  auto fn = [](const at::Tensor& x, const at::Tensor& y) { return x + y; };
  const std::string msg =
      message_of([&] { tnn::TensorDictModule(fn, {"x"}, {"a"}, tnn::TensorDictModuleOptions{.out_to_in_map = false}); });
  CHECK(msg == "out_to_in_map is not None but is only used when in_key is a dictionary.");
  CHECK_THROWS_AS(
      tnn::TensorDictModule(torch::nn::Linear(2, 2), {"x"}, {"a"}, tnn::TensorDictModuleOptions{.out_to_in_map = true}),
      std::invalid_argument);
}

// ports test_nn.py::TestTDModule::test_nontensor (the dict in_keys case, with tensors)
TEST_CASE("TensorDictModule with a KeyMap: strictness, names, use in a sequence", "[module][kwargs]") {
  auto fn = [](const tnn::Kwargs& kw) { return kw["string"] * 2; };
  tnn::TensorDictModule tdm(fn, tnn::KeyMap{{"string", "key"}}, {"another"});
  TensorDict td({{"key", torch::full({}, 4.0)}}, {});
  CHECK(tdm(td).get("another").item<float>() == 8.0f);

  // a missing input: an undefined argument, or the strict KeyError
  auto optional_y = [](const tnn::Kwargs& kw) { return kw["y"].defined() ? kw["x"] + kw["y"] : kw["x"]; };
  tnn::TensorDictModule lenient(optional_y, tnn::KeyMap{{"x", "a"}, {"y", "b"}}, {"c"});
  TensorDict only_a({{"a", torch::full({}, 2.0)}}, {});
  CHECK(lenient(only_a).get("c").item<float>() == 2.0f);
  tnn::TensorDictModule strict(optional_y, tnn::KeyMap{{"x", "a"}, {"y", "b"}}, {"c"},
                               tnn::TensorDictModuleOptions{.strict = true});
  CHECK_THROWS_AS(strict(only_a), KeyError);

  // the names must be plain strings, each used once
  CHECK(message_of([&] {
          tnn::TensorDictModule(fn, tnn::KeyMap{{{"a", "b"}, "key"}}, {"o"});
        }) == "TensorDictModule: a keyword argument name must be a string, got ('a', 'b')");
  CHECK(message_of([&] {
          tnn::TensorDictModule(fn, tnn::KeyMap{{"k1", "x"}, {"k2", "x"}}, {"o"},
                                tnn::TensorDictModuleOptions{.out_to_in_map = false});
        }) == "TensorDictModule: keyword argument 'x' is mapped more than once");

  // in a sequence, the in_keys are the tensordict keys
  tnn::TensorDictSequential seq(
      {tdm, tnn::TensorDictModule([](const at::Tensor& x) { return x + 1; }, {"another"}, {"last"})});
  CHECK(seq->in_keys() == tnn::Keys{"key"});
  TensorDict td2({{"key", torch::full({}, 1.0)}}, {});
  CHECK(seq(td2).get("last").item<float>() == 3.0f);
}
