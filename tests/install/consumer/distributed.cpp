// tensorclass::distributed from the installed package: a one-rank Gloo group.
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <tensordict/distributed.h>
#include <unistd.h>

#include <string>

bool distributed_works() {
  const std::string path = "consumer_store_" + std::to_string(::getpid());
  auto store = c10::make_intrusive<c10d::FileStore>(path, 1);
  auto group = tensordict::gloo_process_group(store, 0, 1);
  tensordict::TensorDict td({{"x", at::ones({2})}}, {2});
  tensordict::all_reduce(td, group);
  ::unlink(path.c_str());
  return td.get("x").sum().item<float>() == 2.f;
}
