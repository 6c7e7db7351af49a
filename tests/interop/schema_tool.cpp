// The C++ half of the two-language schema suite (run_schemas.py drives it):
// the structs tensorclass-gen made from the schemas, whose Python modules the
// same generator made.
//   schema_tool classes                      the classes, one per line
//   schema_tool write <dir>                  writes an instance of each class (and one with the optional
//                                            fields unset), and <dir>/manifest.json with their canonical JSON
//   schema_tool load <class> <path>          loads a memmap dir (or an .h5 file) as <class> (validated),
//                                            prints its canonical JSON
//   schema_tool load-tensordict <class> <path>
//                                            loads a memmap dir of a TensorDict (what a Python
//                                            TypedTensorDict writes) into <class> with from_tensordict
//                                            (validated), prints its canonical JSON
//   schema_tool contract <case>              prints the error of a broken contract (run_schemas.py
//                                            breaks the same one in Python)
//   schema_tool retask <src> <dst> [tensordict]
//                                            loads the tct.stack.Episode at <src> (one task per element;
//                                            with `tensordict`, a TensorDict tree, as a TypedTensorDict
//                                            writes it), prints its tasks, writes "retasked" at element 1
//                                            (and a seed of 99 there), stacks it with itself and memmaps
//                                            that to <dst>
#include <exception>
#include <nlohmann/json.hpp>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>

#include "typed_cases.h"

// tests/generator/schemas' agent.yaml and rollout.yaml both declare
// rl::Observation: one binary each (SCHEMA_TOOL_AGENT selects agent.yaml's).
#ifdef SCHEMA_TOOL_AGENT
#include "agent.tc.h"
#else
#include "common.tc.h"
#include "misc.tc.h"
#include "rl.tc.h"
#include "rollout.tc.h"
#include "sequence.tc.h"
#include "tc_common.tc.h"
#include "tc_names.tc.h"
#include "tc_obs.tc.h"
#include "tc_stack.tc.h"
#include "typed.tc.h"
#include "typed_common.tc.h"
#include "vision.tc.h"
#endif

namespace {

namespace fs = std::filesystem;
using tensordict::Json;

struct TypedClass {
  std::function<Json(const fs::path&, bool with_optional)> write;  // returns what it wrote, canonical
  std::function<Json(const fs::path&)> load;
  std::function<Json(const fs::path&)> load_tensordict;
};

// "<class 'tc.rl.Observation'>" -> "tc.rl.Observation": the name Python imports.
std::string python_name(std::string_view type) { return std::string(type.substr(8, type.size() - 10)); }

template <class T>
void add(std::map<std::string, TypedClass>& classes) {
  const auto& info = tensordict::schema::FieldTable<T>::info;
  // Batch dims: as many as the schema fixes, else two.
  std::vector<int64_t> batch{2, 3};
  if (info.fixed_batch_dims) batch.resize(info.batch_names.size());
  classes[python_name(info.python_type)] = TypedClass{
      [batch](const fs::path& dir, bool with_optional) {
        const T obj = interop::make_instance<T>(batch, with_optional);
        tensordict::methods(obj).memmap(dir.string());
        return interop::typed_canonical(obj);
      },
      [](const fs::path& path) {
        return interop::typed_canonical(path.extension() == ".h5" ? tensordict::TensorClass<T>::from_h5(path.string())
                                                                  : tensordict::TensorClass<T>::load_memmap(path.string()));
      },
      [](const fs::path& path) {
        return interop::typed_canonical(
            tensordict::TensorClass<T>::from_tensordict(tensordict::TensorDict::load_memmap(path.string())));
      }};
}

const std::map<std::string, TypedClass>& typed_classes() {
  static const auto classes = [] {
    std::map<std::string, TypedClass> c;
#ifdef SCHEMA_TOOL_AGENT
    add<rl::Agent>(c);
    add<rl::Observation>(c);
#else
    add<tc::rl::Observation>(c);
    add<tc::rl::Transition>(c);
    add<tc::seq::SequenceBatch>(c);
    add<tc::vision::VisionBatch>(c);
    add<tct::common::Agent>(c);
    add<tct::Observation>(c);
    add<tct::Named>(c);
    add<tct::stack::Inner>(c);
    add<tct::stack::Episode>(c);
    add<rl::common::Agent>(c);
    add<rl::Goal>(c);
    add<rl::Observation>(c);
    add<tc::test::misc::Empty>(c);
    add<tc::test::misc::Scalars>(c);
    add<tc::test::misc::Edges>(c);
    // python_form typed_tensordict, and both (typed.yaml, typed_common.yaml).
    add<tct::typed::Goal>(c);
    add<tct::typed::Step>(c);
    add<tct::typed::common::Agent>(c);
    // Field names that are TensorClass methods, keywords, '_'-prefixed (not
    // Shaped: memmap refuses its `shape` and `device`).
    add<tct::names::Inner>(c);
    add<tct::names::PolicyOutput>(c);
#endif
    return c;
  }();
  return classes;
}

#ifndef SCHEMA_TOOL_AGENT
at::Tensor zeros(at::IntArrayRef shape, at::ScalarType dtype = at::kFloat) { return at::zeros(shape, dtype); }

tc::rl::Observation observation(at::Tensor pixels, at::Tensor state) {
  return tc::rl::Observation({.pixels = std::move(pixels), .state = std::move(state)}, {2});
}
#endif

// Each case breaks one contract; run_schemas.py breaks the same one.
const std::map<std::string, std::function<void()>>& contract_cases() {
#ifdef SCHEMA_TOOL_AGENT
  static const std::map<std::string, std::function<void()>> cases;
#else
  static const std::map<std::string, std::function<void()>> cases{
      {"dtype", [] { observation(zeros({2, 3, 4, 4}), zeros({2, 5})); }},
      {"fixed_dim", [] { observation(zeros({2, 2, 4, 4}, at::kByte), zeros({2, 5})); }},
      {"dim_count", [] { observation(zeros({2, 3, 4}, at::kByte), zeros({2, 5})); }},
      {"required", [] { observation(at::Tensor(), zeros({2, 5})); }},
      {"symbol",
       [] {
         tc::seq::SequenceBatch(
             {.tokens = zeros({2, 4}, at::kLong), .mask = zeros({2, 5}, at::kBool), .lengths = zeros({2}, at::kLong)},
             {2});
       }},
      {"batch_dims",
       [] {
         tc::seq::SequenceBatch(
             {.tokens = zeros({2, 4}, at::kLong), .mask = zeros({2, 4}, at::kBool), .lengths = zeros({2}, at::kLong)},
             {});
       }},
  };
#endif
  return cases;
}

int write(const fs::path& dir) {
  fs::create_directories(dir);
  Json manifest = Json::array();
  for (const auto& [name, c] : typed_classes()) {
    for (const bool with_optional : {true, false}) {
      const fs::path path = dir / (name + (with_optional ? "" : "-sparse"));
      manifest.push_back({{"class", name}, {"path", path.string()}, {"expected", c.write(path, with_optional)}});
    }
  }
  std::ofstream(dir / "manifest.json") << manifest.dump(1) << "\n";
  return 0;
}

#ifndef SCHEMA_TOOL_AGENT
// A Python batch with per-element tasks, loaded typed, changed at one
// element, stacked and written back (run_schemas.py checks both ends).
int retask(const fs::path& src, const fs::path& dst, bool from_tensordict) {
  using tct::stack::Episode;
  Episode e = from_tensordict ? Episode::from_tensordict(tensordict::TensorDict::load_memmap(src.string()))
                              : Episode::load_memmap(src.string());
  std::cout << Json(e.task.tolist(e.batch_size())).dump() << "\n";
  Episode one = e.index({1}).clone();
  one.task = "retasked";
  one.seed = 99;
  e = e.clone();
  e.index_put_({1}, one);
  Episode::stack({e, e}).memmap(dst.string());
  return 0;
}
#endif

int usage() {
  std::cerr << "usage: schema_tool classes | write <dir> | load <class> <dir> | load-tensordict <class> <dir> | "
               "contract <case> | retask <src> <dst> [tensordict]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string command = argv[1];
  try {
    if (command == "classes" && argc == 2) {
      for (const auto& [name, c] : typed_classes()) std::cout << name << "\n";
      return 0;
    }
    if (command == "write" && argc == 3) return write(argv[2]);
#ifndef SCHEMA_TOOL_AGENT
    if (command == "retask" && argc == 4) return retask(argv[2], argv[3], false);
    if (command == "retask" && argc == 5 && std::string(argv[4]) == "tensordict") return retask(argv[2], argv[3], true);
#endif
    if ((command == "load" || command == "load-tensordict") && argc == 4) {
      const auto it = typed_classes().find(argv[2]);
      if (it == typed_classes().end()) throw std::invalid_argument(std::string("no class ") + argv[2]);
      const auto& load = command == "load" ? it->second.load : it->second.load_tensordict;
      std::cout << load(argv[3]).dump() << "\n";
      return 0;
    }
    if (command == "contract" && argc == 3) {
      const auto it = contract_cases().find(argv[2]);
      if (it == contract_cases().end()) throw std::invalid_argument(std::string("no contract case ") + argv[2]);
      try {
        it->second();
      } catch (const std::exception& e) {
        std::cout << e.what() << "\n";
        return 0;
      }
      std::cerr << "schema_tool contract " << argv[2] << ": no error\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "schema_tool " << command << ": " << e.what() << "\n";
    return 1;
  }
  return usage();
}
