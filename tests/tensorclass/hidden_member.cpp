// A hand-written field table (no generator) whose fields take the names of
// TensorClass's members, public ones and the private ones its code uses on
// other instances: the fields hide those members in the struct, and every
// op still works, because TensorClass reaches members only through the
// TensorClass<T> base (detail::tc); the hidden methods stay callable through
// tensordict::methods(obj). Prints "hidden members reached: ok" when every
// check holds (tests/tensorclass/CMakeLists.txt).
#include <ATen/ATen.h>
// A class written by hand instantiates the typed engine where it is used.
#include <tensordict/detail/tensorclass_engine.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

// Every name a tensor field of both classes takes after the first, `validate`,
// in declaration order.
#define HIDDEN_FIELDS(X)                                                                                     \
  X(index) X(schema) X(fields) X(batch_size) X(repr) X(derived) X(tc_batch_size_) X(tc_names_) \
  X(tc_device_) X(tc_locked_) X(tc_validated_) X(tc_consolidated_storage_) X(saved_path_) X(init_) X(shell_) \
  X(copy_shell_) X(from_td_) X(map_into_) X(map2_into_) X(pieces_into_) X(combine_into_) X(set_locked_tree_) \
  X(set_device_) X(set_names_) X(name_from_schema_) X(validate_) X(check_dtypes_) X(tensordict_form_)         \
  X(td_form_) X(typed_) X(read_loaded_) X(collect_tags_) X(find_tensor_) X(set_path_) X(for_each_tensor_)     \
  X(for_each_pair_) X(visit_fields_) X(self_) X(tc_) X(register_memmap) X(to_tensordict) X(is_locked) \
  X(compact_fields_) X(detailed_repr_)

#define HIDDEN_MEMBER(field) at::Tensor field;
#define HIDDEN_INFO(field)                                                                                          \
  {.name = #field, .kind = FieldKind::Tensor, .dtype = {}, .has_shape = false, .shape = {}, .type_name = {},        \
   .value_type = ValueType::None, .element_type = ValueType::None, .optional = false, .default_value = {},        \
   .has_default = false, .doc = {}},

namespace probe {
struct Leaf : tensordict::TensorClass<Leaf> {
  at::Tensor validate;
  HIDDEN_FIELDS(HIDDEN_MEMBER)
};
struct Root : tensordict::TensorClass<Root> {
  at::Tensor validate;
  HIDDEN_FIELDS(HIDDEN_MEMBER)
  Leaf nested;
};
}  // namespace probe

#define HIDDEN_PTR_LEAF(name) , &probe::Leaf::name
#define HIDDEN_PTR_ROOT(name) , &probe::Root::name

template <>
struct tensordict::schema::FieldTable<probe::Leaf> {
  static constexpr FieldInfo fields[] = {HIDDEN_INFO(validate) HIDDEN_FIELDS(HIDDEN_INFO)};
  static constexpr ClassInfo info = {.name = "Leaf",
                                     .cpp_name = "probe::Leaf",
                                     .python_type = "<class 'probe.Leaf'>",
                                     .batch_names = {},
                                     .fixed_batch_dims = false,
                                     .fields = fields,
                                     .doc = {}};
  static constexpr auto members = std::make_tuple(&probe::Leaf::validate HIDDEN_FIELDS(HIDDEN_PTR_LEAF));
};

template <>
struct tensordict::schema::FieldTable<probe::Root> {
  static constexpr FieldInfo fields[] = {
      HIDDEN_INFO(validate) HIDDEN_FIELDS(HIDDEN_INFO){.name = "nested",
                                                       .kind = FieldKind::TensorClass,
                                                       .dtype = {},
                                                       .has_shape = false,
                                                       .shape = {},
                                                       .type_name = "probe::Leaf",
                                                       .value_type = ValueType::None,
                                                       .element_type = ValueType::None,
                                                       .optional = false,
                                                       .default_value = {},
                                                       .has_default = false,
                                                       .doc = {}}};
  static constexpr ClassInfo info = {.name = "Root",
                                     .cpp_name = "probe::Root",
                                     .python_type = "<class 'probe.Root'>",
                                     .batch_names = {},
                                     .fixed_batch_dims = false,
                                     .fields = fields,
                                     .doc = {}};
  static constexpr auto members =
      std::make_tuple(&probe::Root::validate HIDDEN_FIELDS(HIDDEN_PTR_ROOT), &probe::Root::nested);
};

namespace {

int failures = 0;
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}
#define EXPECT(expr) check((expr), #expr)

template <class T>
void fill(T& obj, int64_t n) {
  int k = 0;
  tensordict::detail::visit_fields<T>(
      [&](tensordict::detail::TensorField, auto, at::Tensor& m) { m = at::arange(n * 2, at::kFloat).view({n, 2}) + k++; },
      obj);
}

}  // namespace

int main() {
  using tensordict::methods;
  probe::Root r;
  fill(r, 4);
  fill(r.nested, 4);
  methods(r).init_({4});
  EXPECT(methods(r).batch_size() == at::IntArrayRef({4}));
  EXPECT(methods(r.nested).batch_size() == at::IntArrayRef({4}));
  EXPECT(r.batch_size.sizes() == at::IntArrayRef({4, 2}));  // the field
  methods(r).validate();
  // `fields` and `schema` are fields too: the static members are named through the base.
  EXPECT(tensordict::TensorClass<probe::Root>::fields().size() == 46);
  EXPECT(tensordict::TensorClass<probe::Root>::schema().name == "Root");
  const probe::Root i = methods(r).index({at::indexing::Slice(1, 3)});
  EXPECT(methods(i).batch_size() == at::IntArrayRef({2}));
  EXPECT(at::equal(i.tc_batch_size_, r.tc_batch_size_.narrow(0, 1, 2)));
  EXPECT(at::equal(i.nested.init_, r.nested.init_.narrow(0, 1, 2)));
  const auto parts = methods(r).unbind(0);
  EXPECT(parts.size() == 4);
  const probe::Root s = probe::Root::stack({parts[0], parts[1]}, 0);
  EXPECT(methods(s.nested).batch_size() == at::IntArrayRef({2}));
  EXPECT(at::equal(s.index, r.index.narrow(0, 0, 2)));
  const probe::Root c = probe::Root::cat({r, r}, 0);
  EXPECT(methods(c.nested).batch_size() == at::IntArrayRef({8}));
  const probe::Root a = methods(r).apply([](const at::Tensor& t) { return t + 1; });
  EXPECT(at::equal(a.shell_, r.shell_ + 1));
  const probe::Root m = r + r;
  EXPECT(at::equal(m.nested.tc_names_, r.nested.tc_names_ * 2));
  EXPECT(methods(r).reshape({2, 2}).derived.sizes() == at::IntArrayRef({2, 2, 2}));
  EXPECT(methods(r).to_tensordict().contains("tc_batch_size_"));
  methods(r).lock_();
  EXPECT(methods(r).is_locked());
  EXPECT(methods(r.nested).is_locked());
  methods(r).unlock_();
  EXPECT(methods(r).repr().find("tc_locked_: f32[") != std::string::npos);
  const auto dir = std::filesystem::temp_directory_path() / ("hidden_member_" + std::to_string(::getpid()));
  const probe::Root saved = methods(r).memmap(dir.string());
  EXPECT(methods(saved).is_memmap());
  const probe::Root back = probe::Root::load_memmap(dir.string());
  EXPECT(at::equal(back.saved_path_, r.saved_path_));
  EXPECT(at::equal(back.nested.collect_tags_, r.nested.collect_tags_));
  EXPECT(methods(back).saved_path() == dir.string());
  std::filesystem::remove_all(dir);
  if (failures) return EXIT_FAILURE;
  std::puts("hidden members reached: ok");
  return EXIT_SUCCESS;
}
