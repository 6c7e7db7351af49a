// Compiles the golden YAML outputs (not linked into anything): the emitted
// code must be valid, warning-free C++20, and the tables must say what the
// schemas say.
#include "literals.tc.h"
#include "misc.tc.h"
#include "rollout.tc.h"
#include "stack.tc.h"

namespace {

using tensordict::schema::DimKind;
using tensordict::schema::FieldKind;
using tensordict::schema::FieldTable;
using tensordict::schema::ValueType;

// NonTensorStack fields: the member type and the table's kind.
using StackEnv = FieldTable<tc::test::stack::Env>;
static_assert(StackEnv::info.fields[1].kind == FieldKind::NonTensorStack);
static_assert(StackEnv::info.fields[1].value_type == ValueType::String);
static_assert(StackEnv::info.fields[1].default_value == "reach");
static_assert(std::is_same_v<decltype(tc::test::stack::Env::seed), tensordict::NonTensorStack<std::int64_t>>);

using Obs = FieldTable<rl::Observation>;
static_assert(Obs::info.name == "Observation");
static_assert(Obs::info.cpp_name == "rl::Observation");
static_assert(Obs::info.python_type == "<class 'rl.types.Observation'>");
static_assert(Obs::info.fixed_batch_dims && Obs::info.batch_names.size() == 2);
static_assert(Obs::info.batch_names[1] == "time");
static_assert(Obs::info.fields.size() == std::tuple_size_v<decltype(Obs::members)>);
static_assert(Obs::info.fields[0].name == "pixels" && Obs::info.fields[0].dtype == "uint8");
static_assert(Obs::info.fields[0].shape.size() == 4);
static_assert(Obs::info.fields[0].shape[0].kind == DimKind::Batch);
static_assert(Obs::info.fields[0].shape[1].kind == DimKind::Fixed && Obs::info.fields[0].shape[1].size == 3);
static_assert(Obs::info.fields[0].shape[2].symbol == "H");
static_assert(Obs::info.fields[1].optional);
static_assert(Obs::info.fields[3].kind == FieldKind::TensorClass);
static_assert(Obs::info.fields[3].type_name == "rl::common::Agent");
static_assert(std::get<0>(Obs::members) == &rl::Observation::pixels);

using Goal = FieldTable<rl::Goal>;
static_assert(Goal::info.fields[2].value_type == ValueType::List);
static_assert(Goal::info.fields[2].element_type == ValueType::String);
static_assert(Goal::info.fields[5].kind == FieldKind::Tensor && !Goal::info.fields[5].has_shape);

using Empty = FieldTable<tc::test::misc::Empty>;
static_assert(Empty::info.fields.empty() && std::tuple_size_v<decltype(Empty::members)> == 0);
using Scalars = FieldTable<tc::test::misc::Scalars>;
static_assert(Scalars::info.fixed_batch_dims && Scalars::info.batch_names.empty());
static_assert(Scalars::info.fields[4].has_shape && Scalars::info.fields[4].shape.empty());

// Texts with a NUL keep what follows it.
using Strings = FieldTable<tc::test::literals::Strings>;
static_assert(Strings::info.doc == std::string_view("before\0after", 12));
static_assert(Strings::info.fields[0].default_value == std::string_view("a\0b", 3));
static_assert(Strings::info.fields[0].doc == std::string_view("x\0y", 3));
static_assert(Strings::info.fields[1].default_value == std::string_view("[p\0q, \0, plain]", 15));

// The generated structs are usable with their defaults.
[[maybe_unused]] void use() {
  tc::test::misc::Scalars s;
  s.big += 1;
  rl::Goal g;
  g.tags.push_back("c");
  // An integer literal past every integer type is only a warning (-Werror
  // here): literals.yaml's whole-number float defaults must be double literals.
  tc::test::literals::Numbers n;
  n.whole *= 2;
}

}  // namespace
