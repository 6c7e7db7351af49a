// TensorDictModuleWrapper: forwards calls, keys, parameters and selection.
#include "three_outputs.h"

using td_test::a0_b1;
using td_test::sorted_keys;
using td_test::three_outputs;

namespace {

// tensordict's docstring example: a subclass that changes the call.
class TimesTenImpl : public tnn::TensorDictModuleWrapperImpl {
 public:
  using TensorDictModuleWrapperImpl::TensorDictModuleWrapperImpl;
  std::string_view type_name() const override { return "TimesTen"; }

 protected:
  TensorDict run_impl(const TensorDict& td, const std::optional<TensorDict>& out) override {
    TensorDict result = td_module()->run(td, out);
    result.set("y", result.get("y") * 10);
    return result;
  }
};
class TimesTen : public tnn::TensorDictModuleHolder<TimesTenImpl> {
 public:
  using tnn::TensorDictModuleHolder<TimesTenImpl>::TensorDictModuleHolder;
};

}  // namespace

// ports test_nn.py::TestSelectOutKeys::test_tdmodule_wrap
TEST_CASE("TensorDictModuleWrapper runs the wrapped module, select_out_keys on the wrapper", "[wrapper][select]") {
  const std::vector<tnn::Keys> selections{{"d", "e"}, {"d"}};
  for (const auto& selection : selections) {
    tnn::TensorDictModuleWrapper mod(three_outputs());
    CHECK(mod->in_keys() == tnn::Keys{"a", "b"});
    CHECK(mod->out_keys() == tnn::Keys{"c", "d", "e"});
    CHECK(sorted_keys(mod(a0_b1())) == std::vector<NestedKey>{"a", "b", "c", "d", "e"});
    auto& mod2 = mod->select_out_keys(selection);
    CHECK(&mod2 == mod.get());
    CHECK(mod->out_keys() == selection);
    TensorDict td = mod(a0_b1());
    CHECK_FALSE(td.contains("c"));
    CHECK(td.contains("e") == (selection.size() == 2));
    CHECK(td.get("d").item<float>() == 3.0f);
    auto& mod3 = mod->reset_out_keys();
    CHECK(&mod3 == mod.get());
    CHECK(sorted_keys(mod(a0_b1())) == std::vector<NestedKey>{"a", "b", "c", "d", "e"});
  }
  // unpack=False: the keys passed as one key
  tnn::TensorDictModuleWrapper mod(three_outputs());
  CHECK(message_of([&] {
          mod->select_out_keys({{"d", "e"}});
        }) ==
        "Can't select non existent key: ('d', 'e'). Are you passing the keys in a list? Try unpacking as: `d, e`");
}

// ports test_nn.py::TestSelectOutKeys::test_tdmodule_wrap_dispatch
TEST_CASE("TensorDictModuleWrapper with the tensor-call form", "[wrapper][select]") {
  for (const tnn::Keys& selection : {tnn::Keys{"d", "e"}, tnn::Keys{"d"}}) {
    td_test::check_dispatch_selection(tnn::TensorDictModuleWrapper(three_outputs()), selection);
  }
}

TEST_CASE("TensorDictModuleWrapper subclass changes the call (tensordict's docstring)", "[wrapper]") {
  TimesTen wrapped(tnn::TensorDictModule([](const at::Tensor& x) { return x + 1; }, {"x"}, {"y"}));
  CHECK(wrapped->in_keys() == tnn::Keys{"x"});
  CHECK(wrapped->out_keys() == tnn::Keys{"y"});
  TensorDict td({{"x", torch::zeros({2})}}, {});
  CHECK(torch::equal(wrapped(td).get("y"), torch::full({2}, 10.0)));  // (0 + 1) * 10
  // into an output tensordict
  TensorDict out;
  wrapped->forward(TensorDict({{"x", torch::ones({2})}}, {}), out);
  CHECK(torch::equal(out.get("y"), torch::full({2}, 20.0)));
}

TEST_CASE("TensorDictModuleWrapper exposes the wrapped module and its parameters", "[wrapper]") {
  torch::nn::Linear linear(2, 3);
  tnn::TensorDictModule inner(linear, {"x"}, {"y"});
  tnn::TensorDictModuleWrapper wrapper(inner);
  CHECK(wrapper->td_module() == inner.ptr());
  CHECK(wrapper->td_module_as<tnn::TensorDictModuleImpl>() == inner.ptr());
  // tensordict's attribute forwarding: the wrapped module's own accessors
  CHECK(wrapper->td_module_as<tnn::TensorDictModuleImpl>()->strict() == false);
  const auto names = wrapper->named_parameters().keys();
  CHECK(names == std::vector<std::string>{"td_module.module.weight", "td_module.module.bias"});
  // the wrapper's call is the wrapped module's
  TensorDict td({{"x", torch::randn({4, 2})}}, {4});
  const at::Tensor expected = linear(td.get("x"));
  CHECK(torch::allclose(wrapper(td).get("y"), expected));
  // a selection made on the wrapped module before wrapping gives the wrapper's out_keys
  auto three = three_outputs();
  three->select_out_keys({"c"});
  CHECK(tnn::TensorDictModuleWrapper(three)->out_keys() == tnn::Keys{"c"});
  std::ostringstream os;
  os << *tnn::TensorDictModuleWrapper(three);
  CHECK(os.str().rfind("TensorDictModuleWrapper(\n    td_module=TensorDictModule(", 0) == 0);
  CHECK(os.str().find("    in_keys=['a', 'b'],\n    out_keys=['c'])") != std::string::npos);
}

TEST_CASE("TensorDictModuleWrapper errors", "[wrapper][errors]") {
  const std::shared_ptr<tnn::TensorDictModuleImpl> null;
  CHECK(message_of([&] { tnn::TensorDictModuleWrapper{null}; }) ==
        "TensorDictModuleWrapper: the module to wrap is null");
  CHECK_THROWS_AS(tnn::TensorDictModuleWrapper{null}, tensordict::ValueError);
  tnn::TensorDictModuleWrapper wrapper(three_outputs());
  CHECK(message_of([&] { wrapper->td_module_as<tnn::TensorDictSequentialImpl>(); }) ==
        "TensorDictModuleWrapper: the wrapped module is a TensorDictModule, not the class asked for");
  CHECK_THROWS_AS(wrapper->td_module_as<tnn::TensorDictSequentialImpl>(), tensordict::TypeError);
  // the wrapped module's errors come through, with their kind
  CHECK_THROWS_AS(wrapper(TensorDict({{"a", torch::zeros({})}}, {})), KeyError);
}
