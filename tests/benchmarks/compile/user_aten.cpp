// A user's translation unit, three ways (tests/benchmarks/timings.py times
// their compiles): the five calls on plain tensors, with <ATen/ATen.h> alone.
#include <ATen/ATen.h>

#include <string>
#include <vector>

std::vector<at::Tensor> five_calls(const std::vector<at::Tensor>& leaves, const std::string& prefix) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : leaves) {
    at::Tensor first = t.index({0});
    at::Tensor head = t.index({at::indexing::Slice(0, 2)});
    at::Tensor both = at::stack({first, head.index({1})});
    at::Tensor wide = both.to(at::kDouble);
    at::Tensor saved = at::from_file(prefix, /*shared=*/false, wide.numel(), at::kDouble);
    out.push_back(saved.copy_(wide.flatten()));
  }
  return out;
}
