#include "append_cases.h"

#include <nlohmann/json.hpp>

#include <tensordict/detail/tensorclass_memmap.h>
#include <tensordict/memmap.h>
#include <tensordict/non_tensor.h>

#include <stdexcept>

#include "canonical.h"
#include "cpp_cases.h"

namespace interop {

using namespace tensordict;

namespace {

// Rows written by each step (0: the first write): sizes 2, 1, 3, 0 and 4.
constexpr int64_t kStepRows[kAppendSteps] = {2, 1, 3, 0, 4};
constexpr const char* kObsType = "<class '__main__.Obs'>";

int64_t rows_before(int step) {
  int64_t rows = 0;
  for (int i = 0; i < step; ++i) rows += kStepRows[i];
  return rows;
}

// Every row the steps write: a leaf, a nested level of two batch dims, dim
// names, a non-tensor value, and an Obs (run_interop.py's tensorclass) whose
// non-tensor fields the tags carry.
TensorDict all_rows() {
  const int64_t n = rows_before(kAppendSteps);
  TensorDict obs({{"pixels", values({n, 2, 2}, at::kByte)}, {"reward", values({n}, at::kFloat)}}, {n});
  TensorDict td({{"x", values({n, 3}, at::kDouble)},
                 {"next", TensorDict({{"reward", values({n, 2}, at::kLong)}, {"done", values({n, 2, 1}, at::kBool)}},
                                     {n, 2})},
                 {"obs", obs}},
                {n});
  td.set_non_tensor("task", "walk");
  td.rename_({"time"});
  return td;
}

const MemmapClassTags& tags() {
  static const MemmapClassTags t{{{"obs"}, MemmapClassTag{kObsType, {{"label", "walk"}, {"step", 7}}}}};
  return t;
}

// What Python reads for `rows`: the Obs level with its non-tensor fields and class.
Json expected(const TensorDict& rows) {
  TensorDict form = rows.clone({.recurse = false});
  TensorDict obs = form.get_td("obs");
  for (const auto& [key, value] : tags().at({"obs"}).fields.items()) obs.set_non_tensor(key, value);
  obs.set_non_tensor(std::string(kLoadedClassKey), kObsType);
  return canonical(form);
}

}  // namespace

Json append_step(const std::string& dir, int step) {
  if (step < 0 || step >= kAppendSteps) throw std::invalid_argument("append step out of range");
  const TensorDict all = all_rows();
  const int64_t begin = rows_before(step);
  const int64_t end = begin + kStepRows[step];
  const TensorDict rows = all.index({at::indexing::Slice(begin, end)});
  if (step == 0) {
    memmap_tensorclass(rows, dir, tags());
  } else {
    append_memmap_tensorclass(dir, rows, tags());
  }
  return expected(all.index({at::indexing::Slice(0, end)}));
}

}  // namespace interop
