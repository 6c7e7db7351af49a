// main() of the C++ rank: joins the group from the environment that
// run_mixed.py sets (init_process_group, env://) and runs the named scenario.
#include "mixed_rank.h"

#include <ATen/ops/equal.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <sstream>
#include <stdexcept>

namespace mixed {

namespace {
std::map<std::string, Scenario>& registry() {
  static std::map<std::string, Scenario> scenarios;
  return scenarios;
}
}  // namespace

Register::Register(const char* name, Scenario scenario) { registry().emplace(name, std::move(scenario)); }

void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("check failed: " + what);
}

void expect_equal(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  std::ostringstream why;
  if (!got.defined()) {
    why << "undefined";
  } else if (got.scalar_type() != want.scalar_type() || got.sizes() != want.sizes()) {
    why << got.scalar_type() << got.sizes() << " instead of " << want.scalar_type() << want.sizes();
  } else if (!at::equal(got.cpu(), want.cpu())) {
    why << "\n" << got << "\ninstead of\n" << want;
  } else {
    return;
  }
  throw std::runtime_error(fmt::format("check failed: {}: {}", what, why.str()));
}

void expect_error(const std::function<void()>& f, const std::string& fragment, const std::string& what) {
  try {
    f();
  } catch (const std::exception& e) {
    const std::string message = e.what();
    expect(message.find(fragment) != std::string::npos,
           fmt::format("{}: the message '{}' lacks '{}'", what, message, fragment));
    return;
  }
  throw std::runtime_error(fmt::format("check failed: {}: no error", what));
}

}  // namespace mixed

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mixed_rank SCENARIO [ARGS...] (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set)\n");
    return 2;
  }
  const auto it = mixed::registry().find(argv[1]);
  if (it == mixed::registry().end()) {
    std::fprintf(stderr, "mixed_rank: no scenario '%s'\n", argv[1]);
    return 2;
  }
  try {
    mixed::Rank r;
    // run_mixed.py --backend nccl sets MIXED_BACKEND (and LOCAL_RANK, which picks the GPU).
    const char* backend = std::getenv("MIXED_BACKEND");
    r.group = tensordict::init_process_group({.backend = backend ? backend : "gloo", .timeout = std::chrono::seconds(60)});
    r.rank = r.group->getRank();
    r.world = r.group->getSize();
    r.args.assign(argv + 2, argv + argc);
    it->second(r);
    std::printf("rank %d (C++): %s ok\n", r.rank, argv[1]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "C++ rank: %s failed: %s\n", argv[1], e.what());
    return 1;
  }
}
