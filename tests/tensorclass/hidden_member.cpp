// Must NOT compile (tests/tensorclass/CMakeLists.txt builds it and expects
// TensorClass's static_assert): a hand-written field table whose field
// `validate` hides TensorClass::validate. tensorclass-gen refuses the name;
// a table written by hand meets the runtime's check instead.
#include <tensordict/tensorclass.h>

namespace probe {
struct Obs : tensordict::TensorClass<Obs> {
  at::Tensor validate;
};
}  // namespace probe

template <>
struct tensordict::schema::FieldTable<probe::Obs> {
  static constexpr FieldInfo fields[] = {{.name = "validate",
                                          .kind = FieldKind::Tensor,
                                          .dtype = {},
                                          .has_shape = false,
                                          .shape = {},
                                          .type_name = {},
                                          .value_type = ValueType::None,
                                          .element_type = ValueType::None,
                                          .optional = false,
                                          .default_value = {},
                                          .has_default = false,
                                          .doc = {}}};
  static constexpr ClassInfo info = {.name = "Obs",
                                     .cpp_name = "probe::Obs",
                                     .python_type = "<class 'probe.Obs'>",
                                     .batch_names = {},
                                     .fixed_batch_dims = false,
                                     .fields = fields,
                                     .doc = {}};
  static constexpr auto members = std::make_tuple(&probe::Obs::validate);
};

int main() { return static_cast<int>(probe::Obs::fields().size()); }
