// TensorDictSequential as a container: indexing, slicing, set/erase, named
// modules.
#include "nn_test.h"

namespace {

tnn::TensorDictModule add_one(NestedKey in, NestedKey out) {
  return tnn::TensorDictModule([](const at::Tensor& x) { return x + 1; }, {std::move(in)}, {std::move(out)});
}

bool is_probabilistic_sequence(const tnn::TensorDictSequential& seq) {
  return std::dynamic_pointer_cast<tnn::ProbabilisticTensorDictSequentialImpl>(seq.ptr()) != nullptr;
}

}  // namespace

TEST_CASE("TensorDictSequential: seq[i] is the module itself, negative indices count from the end", "[sequential]") {
  auto m0 = add_one("a", "b");
  auto m1 = add_one("b", "c");
  auto m2 = add_one("c", "d");
  tnn::TensorDictSequential seq({m0, m1, m2});
  CHECK(seq->size() == 3);
  CHECK(seq[0].get() == m0.get());
  CHECK(seq[2].get() == m2.get());
  CHECK(seq[-1].get() == m2.get());
  CHECK(seq[-3].get() == m0.get());
  CHECK_THROWS_AS(seq[3], std::out_of_range);
  CHECK(message_of([&] { (void)seq[3]; }) ==
        "TensorDictSequential: index 3 is out of range for a sequence of 3 module(s)");
  CHECK(message_of([&] { (void)seq[-4]; }) ==
        "TensorDictSequential: index -4 is out of range for a sequence of 3 module(s)");
  CHECK(message_of([&] { (void)seq["a"]; }) == "TensorDictSequential: no module named 'a': the modules are not named");
  CHECK_THROWS_AS(seq["a"], KeyError);
}

// ports test_nn.py::TestTDSequence::test_stateful
TEST_CASE("TensorDictSequential: set and erase a module", "[sequential]") {
  torch::manual_seed(0);
  torch::nn::Linear net1(3, 4), dummy_net(4, 4), net2(4, 4);
  tnn::TensorDictModule tdmodule1(net1, {"in"}, {"hidden"});
  tnn::TensorDictModule dummy_tdmodule(dummy_net, {"hidden"}, {"hidden"});
  tnn::TensorDictModule tdmodule2(net2, {"hidden"}, {"out"});
  tnn::TensorDictSequential tdmodule({tdmodule1, dummy_tdmodule, tdmodule2});
  CHECK(tdmodule->size() == 3);
  tdmodule->set(1, tdmodule2);
  CHECK(tdmodule->size() == 3);
  tdmodule->erase(2);
  CHECK(tdmodule->size() == 2);
  CHECK(tdmodule[0].get() == tdmodule1.get());
  CHECK(tdmodule[1].get() == tdmodule2.get());

  // the registered submodules follow: net1's and net2's parameters only
  auto named = tdmodule->named_parameters();
  CHECK(named.size() == 4);
  CHECK(named["module.0.module.weight"].is_same(net1->weight));
  CHECK(named["module.1.module.weight"].is_same(net2->weight));

  TensorDict td({{"in", torch::randn({3, 3})}}, {3});
  tdmodule(td);
  CHECK(td.batch_size() == at::IntArrayRef{3});
  CHECK(td.get("out").sizes() == at::IntArrayRef{3, 4});
  CHECK(torch::allclose(td.get("out"), net2(net1(td.get("in")))));
}

TEST_CASE("TensorDictSequential: in_keys and out_keys are recomputed after set and erase", "[sequential]") {
  // tensordict leaves them stale (sequence.py:685-690).
  tnn::TensorDictSequential seq({add_one("a", "b"), add_one("b", "c"), add_one("c", "d")});
  CHECK(seq->in_keys() == tnn::Keys{"a"});
  seq->erase(1);
  CHECK(seq->in_keys() == tnn::Keys{"a", "c"});
  CHECK(seq->out_keys() == tnn::Keys{"b", "d"});
  seq->set(-1, add_one("x", "y"));
  CHECK(seq->in_keys() == tnn::Keys{"a", "x"});
  CHECK(seq->out_keys() == tnn::Keys{"b", "y"});
  TensorDict td({{"a", torch::zeros({})}, {"x", torch::full({}, 5.0)}}, {});
  seq(td);
  CHECK(td.get("b").item<float>() == 1.0f);
  CHECK(td.get("y").item<float>() == 6.0f);
  CHECK_FALSE(td.contains("d"));

  CHECK_THROWS_AS(seq->erase(2), std::out_of_range);
  CHECK(message_of([&] { seq->set(5, add_one("a", "b")); }) ==
        "TensorDictSequential: index 5 is out of range for a sequence of 2 module(s)");
  seq->erase(0);
  seq->erase(0);
  CHECK(seq->size() == 0);
  CHECK(seq->in_keys().empty());
  CHECK(seq->out_keys().empty());
}

TEST_CASE("TensorDictSequential: a change that drops a selected out_key is refused and changes nothing",
          "[sequential][errors]") {
  auto m0 = add_one("a", "b");
  auto m1 = add_one("b", "c");
  tnn::TensorDictSequential seq({m0, m1}, {.selected_out_keys = {"c"}});
  const std::string msg = message_of([&] { seq->erase(1); });
  CHECK(msg == "All keys in selected_out_keys must be in out_keys.");
  CHECK_THROWS_AS(seq->erase(-1), std::invalid_argument);
  CHECK(seq->size() == 2);
  CHECK(seq[1].get() == m1.get());
  CHECK(seq->out_keys() == tnn::Keys{"c"});
  // a change that keeps the selected key is fine; the selection stays
  seq->set(0, add_one("z", "b"));
  CHECK(seq->in_keys() == tnn::Keys{"z"});
  CHECK(seq->out_keys() == tnn::Keys{"c"});
  CHECK(seq->out_keys_source() == tnn::Keys{"b", "c"});
}

TEST_CASE("TensorDictSequential: slice gives a new sequence of the same modules with its own keys", "[sequential]") {
  auto m0 = add_one("a", "b");
  auto m1 = add_one("b", "c");
  auto m2 = add_one("c", "d");
  tnn::TensorDictSequential seq({m0, m1, m2}, {.partial_tolerant = true});

  auto head = seq->slice(std::nullopt, 2);  // seq[:2]
  REQUIRE(head->size() == 2);
  CHECK(head[0].get() == m0.get());
  CHECK(head[1].get() == m1.get());
  CHECK(head->in_keys() == tnn::Keys{"a"});
  CHECK(head->out_keys() == tnn::Keys{"b", "c"});
  CHECK(head->partial_tolerant());
  CHECK(head.get() != seq.get());

  auto tail = seq->slice(-2);  // seq[-2:]
  REQUIRE(tail->size() == 2);
  CHECK(tail[0].get() == m1.get());
  CHECK(tail->in_keys() == tnn::Keys{"b"});
  CHECK(tail->out_keys() == tnn::Keys{"c", "d"});

  auto reversed = seq->slice(std::nullopt, std::nullopt, -1);  // seq[::-1]
  REQUIRE(reversed->size() == 3);
  CHECK(reversed[0].get() == m2.get());
  CHECK(reversed->in_keys() == tnn::Keys{"c", "b", "a"});

  auto every_other = seq->slice(0, 10, 2);  // seq[0:10:2]: bounds are clamped
  REQUIRE(every_other->size() == 2);
  CHECK(every_other[1].get() == m2.get());

  CHECK(seq->slice(2, 1)->size() == 0);
  CHECK(message_of([&] { seq->slice(0, 2, 0); }) == "slice step cannot be zero");
  CHECK_THROWS_AS(seq->slice(0, 2, 0), std::invalid_argument);

  TensorDict td({{"b", torch::zeros({})}}, {});
  tail(td);
  CHECK(td.get("d").item<float>() == 2.0f);
  CHECK_FALSE(td.contains("a"));
}

// ports test_nn.py::TestTDSequence::test_ordered_dict
TEST_CASE("TensorDictSequential from named modules: seq[\"name\"] and submodule names", "[sequential]") {
  torch::nn::Linear linear(3, 4);
  torch::NoGradGuard no_grad;
  linear->weight.fill_(0);
  linear->bias.fill_(1);
  tnn::TensorDictModule layer0(linear, {"x"}, {"y"});
  // tensordict's `lambda td: td + 1`, here over the two keys it reaches
  tnn::TensorDictModule layer1([](const at::Tensor& x, const at::Tensor& y) { return std::make_pair(x + 1, y + 1); },
                               {"x", "y"}, {"x", "y"});
  tnn::TensorDictSequential seq(tnn::NamedModules{{"layer0", layer0}, {"layer1", layer1}});
  TensorDict td({{"x", torch::ones({3})}}, {});
  seq(td);
  CHECK(torch::equal(td.get("x"), torch::full({3}, 2.0)));
  CHECK(torch::equal(td.get("y"), torch::full({4}, 2.0)));
  CHECK(seq["layer0"].get() == layer0.get());
  CHECK(seq["layer1"].get() == layer1.get());
  CHECK(seq[0].get() == layer0.get());  // integer indices work too (tensordict: KeyError: 0)
  CHECK(seq->names() == std::vector<std::string>{"layer0", "layer1"});
  CHECK(seq->named_parameters().contains("module.layer0.module.weight"));
  CHECK(seq->named_children().contains("module"));
  CHECK(seq->named_modules().contains("module.layer1"));

  CHECK(message_of([&] { (void)seq["layer2"]; }) ==
        "TensorDictSequential: no module named 'layer2' (names: 'layer0', 'layer1')");
  CHECK_THROWS_AS(seq["layer2"], KeyError);
}

// ports test_nn.py::TestTDSequence::test_ordered_dict_select_subsequence
TEST_CASE("select_subsequence of a named sequence keeps the names", "[sequential]") {
  tnn::TensorDictSequential seq(tnn::NamedModules{
      {"layer0", tnn::TensorDictModule([](const at::Tensor& x) { return x + 1; }, {"x"}, {"y"})},
      {"layer1", tnn::TensorDictModule([](const at::Tensor& x) { return x - 1; }, {"y"}, {"z"})},
      {"layer2",
       tnn::TensorDictModule([](const at::Tensor& x, const at::Tensor& y) { return x + y; }, {"x", "y"}, {"a"})},
  });
  CHECK(seq->size() == 3);
  auto selected = seq->select_subsequence(std::nullopt, tnn::Keys{"a"});
  CHECK(selected->size() == 2);
  CHECK(selected->names() == std::vector<std::string>{"layer0", "layer2"});
  CHECK(selected["layer2"].get() == seq["layer2"].get());
  CHECK(selected->named_modules().contains("module.layer2"));
  // slices keep names too (tensordict: TypeError: unhashable type: 'slice')
  CHECK(seq->slice(1)->names() == std::vector<std::string>{"layer1", "layer2"});
}

TEST_CASE("Named sequences: set and erase by name, repr, name checks", "[sequential]") {
  auto first = add_one("a", "b");
  auto second = add_one("b", "c");
  tnn::TensorDictSequential seq(tnn::NamedModules{{"first", first}, {"second", second}});
  CHECK(seq->repr() ==
        "TensorDictSequential(\n"
        "    module=ModuleDict(\n"
        "      (first): TensorDictModule(\n"
        "          module=<function>,\n"
        "          device=cpu,\n"
        "          in_keys=['a'],\n"
        "          out_keys=['b'])\n"
        "      (second): TensorDictModule(\n"
        "          module=<function>,\n"
        "          device=cpu,\n"
        "          in_keys=['b'],\n"
        "          out_keys=['c'])\n"
        "    ),\n"
        "    device=cpu,\n"
        "    in_keys=['a'],\n"
        "    out_keys=['b', 'c'])");
  auto replacement = add_one("x", "b");
  seq->set("first", replacement);
  CHECK(seq["first"].get() == replacement.get());
  CHECK(seq->in_keys() == tnn::Keys{"x"});
  seq->erase("first");
  CHECK(seq->names() == std::vector<std::string>{"second"});
  CHECK(seq->in_keys() == tnn::Keys{"b"});
  CHECK(seq->out_keys() == tnn::Keys{"c"});
  CHECK_FALSE(seq->named_modules().contains("module.first"));
  CHECK(message_of([&] { seq->erase("first"); }) == "TensorDictSequential: no module named 'first' (names: 'second')");

  CHECK(message_of([&] {
          tnn::TensorDictSequential(tnn::NamedModules{{"m", first}, {"m", second}});
        }) == "TensorDictSequential: two modules are named 'm'");
  CHECK(message_of([&] {
          tnn::TensorDictSequential(tnn::NamedModules{{"a.b", first}});
        }) == "TensorDictSequential: a module name must be non-empty and hold no '.', got 'a.b'");
  CHECK_THROWS_AS(tnn::TensorDictSequential(tnn::NamedModules{{"", first}}), std::invalid_argument);
}

// ports test_nn.py::TestProbabilisticTensorDictModule::test_index_prob_seq
TEST_CASE("ProbabilisticTensorDictSequential: indexing and slicing keep the kind when the end is probabilistic",
          "[sequential][probabilistic]") {
  tnn::ProbabilisticTensorDictModule m0(tnn::Keys{"loc"}, {"sample"},
                                        tnn::ProbabilisticOptions{.distribution = tnn::Normal::cls()});
  tnn::TensorDictModule m1([](const at::Tensor& x) { return x; }, {"other"}, {"something"});
  tnn::ProbabilisticTensorDictModule m2(tnn::Keys{"scale"}, {"sample2"},
                                        tnn::ProbabilisticOptions{.distribution = tnn::Normal::cls()});
  tnn::ProbabilisticTensorDictSequential seq({m0, m1, m2});
  CHECK(std::dynamic_pointer_cast<tnn::ProbabilisticTensorDictModuleImpl>(seq[0]) != nullptr);
  auto head = seq->slice(std::nullopt, 2);
  CHECK(head->size() == 2);
  CHECK_FALSE(is_probabilistic_sequence(head));
  auto tail = seq->slice(-2);
  CHECK(is_probabilistic_sequence(tail));
  CHECK(tail->size() == 2);

  // the last module stays probabilistic: erasing or replacing it is refused
  CHECK(message_of([&] { seq->erase(-1); }) ==
        "ProbabilisticTensorDictSequential: the last module must be a ProbabilisticTensorDictModule, got "
        "TensorDictModule");
  CHECK_THROWS_AS(seq->set(2, m1), std::invalid_argument);
  CHECK(seq->size() == 3);
  CHECK(&seq->last() == m2.get());
  seq->erase(1);
  CHECK(seq->in_keys() == tnn::Keys{"loc", "scale"});
  seq->set(-1, m0);
  CHECK(&seq->last() == m0.get());
}
