// Compiles the golden output of the header frontend together with the user's
// annotated header (not linked into anything).
#include "agent_header.tc.h"

namespace {
using Obs = tensordict::schema::FieldTable<rl::Observation>;
static_assert(Obs::info.fields.size() == std::tuple_size_v<decltype(Obs::members)>);
static_assert(Obs::info.fields[4].default_value == "pick \"red\"");
static_assert(std::get<4>(Obs::members) == &rl::Observation::task);
}  // namespace
