// Compiles the golden output of agent.yaml (not linked into anything); it
// declares the same rl::Observation as rollout.yaml, hence its own TU.
#include "agent.tc.h"

namespace {
using Obs = tensordict::schema::FieldTable<rl::Observation>;
static_assert(Obs::info.fields.size() == std::tuple_size_v<decltype(Obs::members)>);
static_assert(Obs::info.fields[4].default_value == "pick \"red\"");
static_assert(Obs::info.python_type == "<class 'rl.Observation'>");

[[maybe_unused]] void use() {
  rl::Observation o;
  o.steps += o.tags.size() + o.ids.size();
}
}  // namespace
