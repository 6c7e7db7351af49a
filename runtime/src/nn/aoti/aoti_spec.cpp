// The package's tensorclass metadata and call spec, read and cross-checked.
#include "nn/aoti/aoti_spec.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <utility>

#include "tensordict/dtype.h"
#include "tensordict/errors.h"

namespace tensordict::nn::aoti {
namespace {

using Json = nlohmann::json;

// Every failure names the package and the part read.
[[noreturn]] void fail(const std::string& path, std::string_view what) {
  throw RuntimeError(fmt::format("AOTIModule: package '{}': {}", path, what));
}

const Json& member(const std::string& path, const Json& object, const char* name, Json::value_t type,
                   std::string_view where) {
  const auto it = object.find(name);
  if (it == object.end()) fail(path, fmt::format("{} has no \"{}\"", where, name));
  if (it->type() != type && !(type == Json::value_t::number_integer && it->is_number_unsigned())) {
    fail(path, fmt::format("{}'s \"{}\" is a JSON {}", where, name, it->type_name()));
  }
  return *it;
}

std::vector<int64_t> sizes(const std::string& path, const Json& list, std::string_view where) {
  std::vector<int64_t> out;
  for (const Json& size : list) {
    if (!size.is_number_integer() || size.get<int64_t>() < 0) {
      fail(path, fmt::format("{} holds {}, not a size", where, size.dump()));
    }
    out.push_back(size.get<int64_t>());
  }
  return out;
}

// An item's "key": a non-empty list of non-empty strings.
NestedKey key(const std::string& path, const Json& item, const std::string& where) {
  std::vector<std::string> parts;
  for (const Json& part : member(path, item, "key", Json::value_t::array, where)) {
    if (!part.is_string() || part.get<std::string>().empty()) {
      fail(path, fmt::format("{}'s key holds {}", where, part.dump()));
    }
    parts.push_back(part.get<std::string>());
  }
  if (parts.empty()) fail(path, fmt::format("{}'s key is empty", where));
  return NestedKey(std::move(parts));
}

// An item's "dtype", by tensordict's name ("float32").
at::ScalarType dtype(const std::string& path, const Json& item, const std::string& where) {
  const auto text = member(path, item, "dtype", Json::value_t::string, where).get<std::string>();
  const auto dtype = dtype_from_name(text);
  if (!dtype) fail(path, fmt::format("{}'s dtype '{}' is no dtype", where, text));
  return *dtype;
}

AOTIEntry entry(const std::string& path, const Json& item, bool input, std::size_t i) {
  const std::string where = fmt::format("{}[{}]", input ? "in_keys" : "out_keys", i);
  if (!item.is_object()) fail(path, fmt::format("{} is a JSON {}, not an object", where, item.type_name()));
  std::string arg = input ? member(path, item, "arg", Json::value_t::string, where).get<std::string>() : "";
  const Json& event_shape = member(path, item, "event_shape", Json::value_t::array, where);
  return AOTIEntry{key(path, item, where), std::move(arg), dtype(path, item, where),
                   sizes(path, event_shape, where + "'s event_shape")};
}

// The "weights" object: {"swappable": bool, "params": [{"key", "fqn", "dtype", "shape"}]}.
void read_weights(const std::string& path, const Json& weights, AOTISpec& spec) {
  if (!weights.is_object()) fail(path, fmt::format("its \"weights\" is a JSON {}, not an object", weights.type_name()));
  spec.swappable_weights = member(path, weights, "swappable", Json::value_t::boolean, "weights").get<bool>();
  const std::string folding = member(path, weights, "folding", Json::value_t::string, "weights").get<std::string>();
  if (folding != "none" && folding != "runtime") fail(path, fmt::format("weights' folding '{}' is unknown", folding));
  spec.runtime_folding = folding == "runtime";
  std::size_t i = 0;
  for (const Json& item : member(path, weights, "params", Json::value_t::array, "weights")) {
    const std::string where = fmt::format("weights.params[{}]", i++);
    if (!item.is_object()) fail(path, fmt::format("{} is a JSON {}, not an object", where, item.type_name()));
    spec.weights.push_back(AOTIWeight{key(path, item, where),
                                      member(path, item, "fqn", Json::value_t::string, where).get<std::string>(),
                                      dtype(path, item, where),
                                      sizes(path, member(path, item, "shape", Json::value_t::array, where),
                                            where + "'s shape")});
  }
}

// The keyword argument names of the input spec, in the order the package
// takes them: [1, {tuple: [(), {dict: context = names}]}] (torch.utils._pytree
// treespec_dumps, protocol 1).
std::vector<std::string> kwarg_order(const std::string& path, const std::string& in_spec) {
  const Json spec = Json::parse(in_spec, nullptr, /*allow_exceptions=*/false);
  auto bad = [&]() -> std::vector<std::string> {
    fail(path, "its input spec is not a call with keyword arguments only (tensordict's export route)");
  };
  if (!spec.is_array() || spec.size() != 2 || !spec[1].is_object()) return bad();
  const Json& top = spec[1];
  const auto children = top.find("children_spec");
  if (children == top.end() || !children->is_array() || children->size() != 2) return bad();
  const Json& args = (*children)[0];
  const Json& kwargs = (*children)[1];
  if (!args.is_object() || !args.contains("children_spec") || !args["children_spec"].empty()) return bad();
  if (!kwargs.is_object() || kwargs.value("type", Json()) != "builtins.dict" || !kwargs["context"].is_string()) {
    return bad();
  }
  const Json names = Json::parse(kwargs["context"].get<std::string>(), nullptr, false);
  if (!names.is_array()) return bad();
  std::vector<std::string> out;
  for (const Json& name : names) {
    if (!name.is_string()) return bad();
    out.push_back(name.get<std::string>());
  }
  return out;
}

// How many tensors the output spec returns: a tuple's children, or one leaf.
std::size_t output_count(const std::string& path, const std::string& out_spec) {
  const Json spec = Json::parse(out_spec, nullptr, false);
  if (!spec.is_array() || spec.size() != 2 || !spec[1].is_object()) fail(path, "its output spec cannot be read");
  const Json& top = spec[1];
  if (top.value("type", Json()).is_null()) return 1;
  const auto children = top.find("children_spec");
  if (children == top.end() || !children->is_array()) fail(path, "its output spec cannot be read");
  return children->size();
}

}  // namespace

AOTISpec read_spec(const std::string& path, const std::unordered_map<std::string, std::string>& metadata) {
  const auto found = metadata.find(kMetadataKey);
  if (found == metadata.end()) {
    fail(path, "no \"tensorclass\" metadata: export it with tensorclass.export.export()");
  }
  const Json meta = Json::parse(found->second, nullptr, false);
  if (!meta.is_object()) fail(path, "its \"tensorclass\" metadata is not a JSON object");
  const auto format = member(path, meta, "format", Json::value_t::number_integer, "the metadata").get<int64_t>();
  if (format > kFormat || format < 1) {
    fail(path, fmt::format("its metadata format is {}; this library reads format {} (export it with this version's "
                           "tensorclass.export, or update the library)",
                           format, kFormat));
  }
  AOTISpec spec;
  std::size_t i = 0;
  for (const Json& item : member(path, meta, "in_keys", Json::value_t::array, "the metadata")) {
    spec.inputs.push_back(entry(path, item, true, i++));
  }
  i = 0;
  for (const Json& item : member(path, meta, "out_keys", Json::value_t::array, "the metadata")) {
    spec.outputs.push_back(entry(path, item, false, i++));
  }
  spec.batch_size = sizes(path, member(path, meta, "batch_size", Json::value_t::array, "the metadata"), "batch_size");
  spec.dynamic_batch = member(path, meta, "dynamic_batch", Json::value_t::boolean, "the metadata").get<bool>();
  if (const auto schema = meta.find("schema"); schema != meta.end() && schema->is_string()) {
    spec.schema = schema->get<std::string>();
  }
  if (const auto type = meta.find("interaction_type"); type != meta.end() && type->is_string()) {
    spec.interaction_type = type->get<std::string>();
  }
  if (const auto weights = meta.find("weights"); weights != meta.end()) read_weights(path, *weights, spec);
  if (const auto device = metadata.find("AOTI_DEVICE_KEY"); device != metadata.end()) {
    spec.device_type = device->second;
  }
  return spec;
}

void apply_call_spec(const std::string& path, const std::vector<std::string>& call_spec, AOTISpec& spec) {
  if (call_spec.size() != 2) fail(path, fmt::format("its call spec has {} parts, not 2", call_spec.size()));
  // The package takes its inputs in its spec's order, which the metadata
  // names by keyword.
  const std::vector<std::string> order = kwarg_order(path, call_spec[0]);
  if (order.size() != spec.inputs.size()) {
    fail(path, fmt::format("it takes {} inputs, its metadata names {}", order.size(), spec.inputs.size()));
  }
  std::vector<AOTIEntry> ordered;
  for (const std::string& arg : order) {
    const auto it = std::find_if(spec.inputs.begin(), spec.inputs.end(), [&](const AOTIEntry& e) { return e.arg == arg; });
    if (it == spec.inputs.end()) fail(path, fmt::format("it takes the argument '{}', which its metadata does not name", arg));
    ordered.push_back(*it);
  }
  spec.inputs = std::move(ordered);
  const std::size_t returned = output_count(path, call_spec[1]);
  if (returned != spec.outputs.size()) {
    fail(path, fmt::format("it returns {} tensors, its metadata names {} out_keys", returned, spec.outputs.size()));
  }
}

}  // namespace tensordict::nn::aoti
