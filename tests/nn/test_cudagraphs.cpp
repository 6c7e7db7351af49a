// CudaGraphModule (tensordict.nn.CudaGraphModule). Without a CUDA device every
// call runs the module, as tensordict's does; the capture and replay cases
// run where a GPU is present (they check has_cuda() first).
#include "nn_test.h"

namespace {

at::Device test_device() { return at::hasCUDA() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU); }
at::TensorOptions on_device() { return at::TensorOptions().device(test_device()); }

}  // namespace

TEST_CASE("CudaGraphModule runs a TensorDictModule on every call (test_compile.py::TestCudaGraphs::test_tdmodule)",
          "[cudagraphs][test_compile.py]") {
  tnn::TensorDictModule module([](const at::Tensor& x) { return x + 1; }, {"x"}, {"y"});
  tnn::CudaGraphModule graph(module);
  CHECK(graph.in_keys() == tnn::Keys{"x"});
  CHECK(graph.out_keys() == tnn::Keys{"y"});
  CHECK(graph.has_cuda() == at::hasCUDA());
  for (int i = 0; i < 10; ++i) {
    INFO("call " << i);
    TensorDict td({{"x", torch::randn({}, on_device())}});
    const TensorDict out = graph(td);
    CHECK(out.impl() == td.impl());
    CHECK(torch::equal(td.get("y"), td.get("x") + 1));
  }
  // Without CUDA nothing is counted: there is nothing to capture.
  CHECK(graph.counter() == (graph.has_cuda() ? 2 : 0));
}

TEST_CASE("CudaGraphModule of functions writing into their input or into a copy (test_compile.py::TestCudaGraphs::test_tdmodule)",
          "[cudagraphs][test_compile.py]") {
  // Keys left empty: the outputs are the leaves the function replaced.
  tnn::CudaGraphModule in_place([](const TensorDict& td) { return TensorDict(td).set("y", td.get("x") + 1); }, {}, {});
  for (int i = 0; i < 10; ++i) {
    TensorDict td({{"x", torch::randn({}, on_device())}});
    CHECK(in_place(td).impl() == td.impl());
    CHECK(torch::equal(td.get("y"), td.get("x") + 1));
  }
  tnn::CudaGraphModule keyed([](const TensorDict& td) { return TensorDict(td).set("y", td.get("x") + 1); }, {"x"},
                             {"y"});
  for (int i = 0; i < 10; ++i) {
    TensorDict td({{"x", torch::randn({}, on_device())}});
    keyed(td);
    CHECK(torch::equal(td.get("y"), td.get("x") + 1));
  }
  tnn::CudaGraphModule copying([](const TensorDict& td) { return td.clone({.recurse = false}).set("y", td.get("x") + 1); }, {}, {});
  for (int i = 0; i < 10; ++i) {
    TensorDict td({{"x", torch::randn({}, on_device())}});
    const TensorDict out = copying(td);
    CHECK(out.impl() != td.impl());
    CHECK(!td.contains("y"));
    CHECK(torch::equal(out.get("y"), td.get("x") + 1));
  }
}

TEST_CASE("CudaGraphModule replaces the input's leaves by clones and refuses leaves requiring gradients",
          "[cudagraphs][errors]") {
  tnn::CudaGraphModule graph([](const TensorDict& td) { td.get("x").add_(1); return td; }, {"x"}, {"x"});
  const at::Tensor x = torch::zeros({3}, on_device());
  TensorDict td({{"x", x}});
  graph(td);
  CHECK(torch::equal(x, torch::zeros({3}, on_device())));  // the caller's tensor is untouched
  CHECK(torch::equal(td.get("x"), torch::ones({3}, on_device())));

  TensorDict grad({{"x", torch::zeros({3}, on_device().requires_grad(true))}});
  CHECK_THROWS_AS(graph(grad), tensordict::RuntimeError);
  CHECK(message_of([&] { graph(grad); }) ==
        "CudaGraphModule cannot be part of a graph (or leaves variables). If you need tensors to require gradients, "
        "please pass them as constant inputs to the module instead (e.g. `def func(a, b, c=c): ...` where c is the "
        "tensor requiring gradients).");

  CHECK_THROWS_AS(tnn::CudaGraphModule(tnn::TensorDictModule([](const at::Tensor& a) { return a; }, {"x"}, {"y"}),
                                       {.warmup = 0}),
                  tensordict::ValueError);
  CHECK(message_of([] {
          tnn::CudaGraphModule m(tnn::TensorDictModule([](const at::Tensor& a) { return a; }, {"x"}, {"y"}),
                                 {.warmup = 0});
        }) == "warmup must be an integer greater than 0.");
}

TEST_CASE("CudaGraphModule prints as tensordict's", "[cudagraphs]") {
  tnn::CudaGraphModule graph([](const TensorDict& td) { return td; }, {"x"}, {{"a", "y"}}, {.warmup = 3});
  CHECK(graph.repr() ==
        "CudaGraphModule(\n    module=<function>, \n    warmup=3, \n    in_keys=['x'], \n    out_keys=[('a', 'y')]\n)");
}

TEST_CASE("CudaGraphModule replays fixed shapes only (CUDA)", "[cudagraphs][cuda][errors]") {
  if (!at::hasCUDA()) {
    SUCCEED("no CUDA device: capture and replay are not exercised here");
    return;
  }
  tnn::TensorDictModule module([](const at::Tensor& x) { return x * 2; }, {"x"}, {"y"});
  tnn::CudaGraphModule graph(module);
  // A capture needs CUDA inputs.
  TensorDict cpu({{"x", torch::randn({4})}});
  graph(TensorDict({{"x", torch::randn({4}, on_device())}}));  // warm-up
  CHECK(message_of([&] { graph(cpu); }) == "All tensors must be stored on CUDA. Got cpu.");
  for (int i = 0; i < 5; ++i) {
    TensorDict td({{"x", torch::randn({4}, on_device())}});
    graph(td);
    CHECK(torch::allclose(td.get("y"), td.get("x") * 2));
  }
  CHECK(graph.counter() == 2);
  TensorDict batched({{"x", torch::randn({2, 4}, on_device())}}, {2});
  CHECK(message_of([&] { graph(batched); }) ==
        "CudaGraphModule was captured with batch_size=torch.Size([]) but got batch_size=torch.Size([2]). CUDA graphs "
        "replay fixed shapes.");
  TensorDict wider({{"x", torch::randn({5}, on_device())}});
  CHECK(message_of([&] { graph(wider); }) ==
        "CudaGraphModule was captured with the entry 'x' of shape torch.Size([4]) but got shape torch.Size([5]). CUDA "
        "graphs replay fixed shapes.");
  TensorDict missing({{"z", torch::randn({4}, on_device())}});
  CHECK_THROWS_AS(graph(missing), KeyError);
  CHECK(message_of([&] { graph(missing); }) ==
        "CudaGraphModule input is missing the in_keys ['x'] that the captured graph reads.");
}
