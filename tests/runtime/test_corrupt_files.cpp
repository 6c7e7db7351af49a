// Corrupt or hostile memmap trees: every case is a clear error naming the path.
#include <fstream>
#include <nlohmann/json.hpp>

#include "persist_helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

namespace {

const char* kLeafMeta = R"({"x": {"device": "cpu", "shape": [4], "dtype": "torch.float32", "is_nested": false}, )"
                        R"("shape": [4], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>"})";

// A one-leaf tree: x = float32 [4] (16 bytes).
fs::path one_leaf(const TempDir& tmp) {
  TensorDict({{"x", iota({4})}}, {4}).memmap(tmp / "t");
  return tmp.path() / "t";
}

std::string load_error(const fs::path& dir) { return TD_MESSAGE(TensorDict::load_memmap(dir.string())); }

}  // namespace

TEST_CASE("corrupt memmap: a missing data file") {
  TempDir tmp;
  const fs::path dir = one_leaf(tmp);
  fs::remove(dir / "x.memmap");
  REQUIRE_THAT(load_error(dir), Contains("cannot open the data file") && Contains((dir / "x.memmap").string()) &&
                                    Contains("'x'") && Contains("16 bytes"));
}

TEST_CASE("corrupt memmap: a truncated data file names both sizes") {
  TempDir tmp;
  const fs::path dir = one_leaf(tmp);
  fs::resize_file(dir / "x.memmap", 10);
  REQUIRE_THAT(load_error(dir), Contains((dir / "x.memmap").string()) && Contains("truncated") &&
                                    Contains("has 10 bytes") && Contains("needs 16 bytes"));
}

TEST_CASE("corrupt memmap: trailing extra bytes are ignored") {
  TempDir tmp;
  const fs::path dir = one_leaf(tmp);
  fs::resize_file(dir / "x.memmap", 20);
  REQUIRE(at::equal(TensorDict::load_memmap(dir.string()).get("x"), iota({4})));
}

TEST_CASE("corrupt memmap: a shape that does not match the file size") {
  TempDir tmp;
  const fs::path dir = one_leaf(tmp);
  std::string meta = kLeafMeta;
  meta.replace(meta.find("[4]"), 3, "[4, 1000]");
  write_text(dir / "meta.json", meta);
  REQUIRE_THAT(load_error(dir), Contains((dir / "x.memmap").string()) && Contains("shape [4, 1000]") &&
                                    Contains("has 16 bytes") && Contains("needs 16000 bytes"));
  // A shape whose byte size overflows is refused before any mapping.
  meta = kLeafMeta;
  meta.replace(meta.find("[4]"), 3, "[4, 9223372036854775807]");
  write_text(dir / "meta.json", meta);
  REQUIRE_THAT(load_error(dir), Contains((dir / "x.memmap").string()) && Contains("too large"));
  meta = kLeafMeta;
  meta.replace(meta.find("[4]"), 3, "[4, -2]");
  write_text(dir / "meta.json", meta);
  REQUIRE_THAT(load_error(dir), Contains((dir / "meta.json").string()) && Contains("non-negative"));
}

TEST_CASE("corrupt memmap: an unknown dtype string") {
  TempDir tmp;
  const fs::path dir = one_leaf(tmp);
  std::string meta = kLeafMeta;
  meta.replace(meta.find("torch.float32"), 13, "torch.float8");
  write_text(dir / "meta.json", meta);
  REQUIRE_THAT(load_error(dir), Contains((dir / "meta.json").string()) && Contains("key 'x'") &&
                                    Contains("unknown dtype 'torch.float8'") && Contains("torch.float32"));
}

TEST_CASE("corrupt memmap: malformed JSON, a missing meta.json, a non-object") {
  TempDir tmp;
  const fs::path dir = one_leaf(tmp);
  write_text(dir / "meta.json", R"({"x": {"device": "cpu", "shape": [4)");
  REQUIRE_THAT(load_error(dir), Contains("malformed JSON") && Contains((dir / "meta.json").string()));
  write_text(dir / "meta.json", "[1, 2]");
  REQUIRE_THAT(load_error(dir), Contains((dir / "meta.json").string()) && Contains("expected a JSON object"));
  fs::remove(dir / "meta.json");
  REQUIRE_THAT(load_error(dir), Contains((dir / "meta.json").string()) && Contains("missing"));
  REQUIRE_THAT(load_error(tmp.path() / "nowhere"), Contains("nowhere") && Contains("not a directory"));
}

TEST_CASE("corrupt memmap: a _type that cannot be mapped") {
  TempDir tmp;
  const fs::path dir = one_leaf(tmp);
  std::string meta = kLeafMeta;
  meta.replace(meta.find("tensordict._td.TensorDict"), 25, "mypackage.Unknown");
  write_text(dir / "meta.json", meta);
  // An unregistered class loads as a tensorclass, whose fields need _tensordict/.
  REQUIRE_THAT(load_error(dir), Contains((dir / "meta.json").string()) && Contains("mypackage.Unknown") &&
                                    Contains("neither a tensordict class nor a registered one") &&
                                    Contains((dir / "_tensordict").string() + " is missing"));
  meta.replace(meta.find("<class 'mypackage.Unknown'>"), 27, "mypackage.Unknown");
  write_text(dir / "meta.json", meta);
  REQUIRE_THAT(load_error(dir), Contains((dir / "meta.json").string()) &&
                                    Contains("cannot map _type \"mypackage.Unknown\" to a C++ class"));
  write_text(dir / "meta.json", R"({"shape": [4], "device": "cpu"})");
  REQUIRE_THAT(load_error(dir), Contains((dir / "meta.json").string()) && Contains("_type"));
}

TEST_CASE("corrupt memmap: a nested directory listed but missing") {
  TempDir tmp;
  TensorDict({{"sub", TensorDict({{"y", iota({2})}}, {2})}}, {2}).memmap(tmp / "t");
  tensordict::remove_tree(tmp.path() / "t" / "sub");
  REQUIRE_THAT(load_error(tmp.path() / "t"), Contains("key 'sub'") && Contains("directory") && Contains("missing"));
}

TEST_CASE("a failed write leaves no half-written meta.json behind") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "t";
  TensorDict({{"x", iota({4})}}, {4}).memmap(dir.string());
  // Writes go to a staging tree beside `dir`, published at the end: a write
  // that fails midway (here a reserved key, found after the first level's
  // files are planned) leaves the previous tree untouched and no temporaries.
  TensorDict bad({{"y", iota({4}) + 1}, {"sub", TensorDict({{"shape", iota({4})}}, {4})}}, {4});
  REQUIRE_THAT(TD_MESSAGE(bad.memmap(dir.string())), Contains("reserved") && Contains("'shape'"));
  REQUIRE(at::equal(TensorDict::load_memmap(dir.string()).get("x"), iota({4})));
  REQUIRE_FALSE(TensorDict::load_memmap(dir.string()).contains("y"));
  for (const auto& e : fs::recursive_directory_iterator(tmp.path())) {
    INFO(e.path().string());
    REQUIRE(e.path().filename().string().find(".tmp.") == std::string::npos);
    REQUIRE(e.path().filename().string().find(".tc-staging.") == std::string::npos);
  }
}

TEST_CASE("corrupt memmap: malformed entries and levels") {
  TempDir tmp;
  const fs::path dir = one_leaf(tmp);
  write_text(dir / "meta.json", R"({"x": {"device": "cpu", "shape": [4]}, "shape": [4], "device": "cpu", )"
                                R"("_type": "<class 'tensordict._td.TensorDict'>"})");
  REQUIRE_THAT(load_error(dir), Contains((dir / "meta.json").string()) && Contains("key 'x' has no dtype"));
  write_text(dir / "meta.json",
             R"({"x": {"device": "cpu", "shape": [4], "dtype": "torch.float32", "is_nested": true}, )"
             R"("shape": [4], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>"})");
  REQUIRE_THAT(load_error(dir), Contains((dir / "meta.json").string()) && Contains("key 'x' is a nested tensor whose shape [4] is "
                                                                                    "not [components, dims]"));
  write_text(dir / "meta.json",
             R"({"x": {"device": "cpu", "shape": [3], "dtype": "torch.float32", "is_nested": false}, )"
             R"("shape": [4], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>"})");
  REQUIRE_THAT(load_error(dir), Contains("key 'x' has shape [3]") && Contains("batch size [4]"));
  write_text(dir / "meta.json",
             R"({"shape": "four", "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>"})");
  REQUIRE_THAT(load_error(dir), Contains((dir / "meta.json").string()) && Contains("\"shape\" must be a list"));

  TensorDict td({{"x", iota({2})}}, {2});
  td.set_non_tensor("s", "text");
  td.memmap(tmp / "nt");
  write_text(tmp.path() / "nt" / "s" / "meta.json", R"({"_type": "<class 'tensordict.tensorclass.NonTensorData'>"})");
  REQUIRE_THAT(load_error(tmp.path() / "nt"), Contains("s/meta.json") && Contains("without \"data\""));
  write_text(tmp.path() / "nt" / "s" / "meta.json",
             R"({"_type": "<class 'tensordict.tensorclass.NonTensorStack'>", "stack_dim": 0, "data": "pickle.pkl"})");
  REQUIRE_THAT(load_error(tmp.path() / "nt"), Contains("s/meta.json") && Contains("pickled stacks are not supported"));
  REQUIRE_THAT(load_error(tmp.path() / "nt" / "s"), Contains("s/meta.json"));
  write_text(tmp.path() / "nt" / "s" / "meta.json",
             R"({"_type": "<class 'tensordict.tensorclass.NonTensorStack'>", "stack_dim": 0, "data": ["a", "b", "c"]})");
  REQUIRE_THAT(load_error(tmp.path() / "nt"), Contains("NonTensorStack of key 's' has shape [3]") && Contains("batch [2]"));

  fs::create_directories(tmp.path() / "lazy");
  write_text(tmp.path() / "lazy" / "meta.json",
             R"({"_type": "<class 'tensordict._lazy.LazyStackedTensorDict'>", "stack_dim": 0})");
  REQUIRE_THAT(load_error(tmp.path() / "lazy"), Contains("lazy") && Contains("member directories 0/, 1/"));
}

TEST_CASE("hostile memmap: keys in meta.json never lead outside the directory") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "t";
  fs::create_directories(dir);
  // The raw-name fallback is refused for names with a separator.
  TensorDict({{"secret", iota({4})}}, {4}).memmap(tmp / "secret");
  write_text(dir / "meta.json",
             R"({"../secret/secret": {"device": "cpu", "shape": [4], "dtype": "torch.float32", "is_nested": false}, )"
             R"("shape": [4], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>"})");
  REQUIRE_THAT(load_error(dir), Contains("cannot open the data file") && Contains("..%2Fsecret%2Fsecret.memmap"));
  write_text(dir / "meta.json", R"({"..": {"type": "TensorDict"}, "shape": [4], "device": "cpu", )"
                                R"("_type": "<class 'tensordict._td.TensorDict'>"})");
  REQUIRE_THAT(load_error(dir), Contains("key '..'") && Contains("%2E%2E") && Contains("missing"));
}

TEST_CASE("corrupt memmap: a nested (jagged) leaf's sizes file missing, hostile or disagreeing with its values") {
  TempDir tmp;
  const std::vector<at::Tensor> parts{iota({2, 3}), iota({4, 3})};
  TensorDict({{"j", at::_nested_tensor_from_tensor_list(parts)}}, {2}).memmap(tmp / "t");
  const fs::path dir = tmp.path() / "t";
  REQUIRE(at::equal(TensorDict::load_memmap(dir.string()).get("j").unbind(0)[1], parts[1]));
  const fs::path sizes = dir / "j.shape.memmap";
  auto write_sizes = [&](std::vector<int64_t> v) {
    std::ofstream(sizes, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(v.data()),
                                                                   static_cast<std::streamsize>(v.size() * sizeof(int64_t)));
  };
  SECTION("missing") {
    fs::remove(sizes);
    REQUIRE_THAT(load_error(dir), Contains("cannot open the data file") && Contains(sizes.string()) && Contains("'j'"));
  }
  SECTION("a negative size") {
    write_sizes({2, 3, -4, 3});
    REQUIRE_THAT(load_error(dir), Contains(sizes.string()) && Contains("component 1 of key 'j' has size -4 in dim 0, which is negative"));
  }
  SECTION("sizes whose product overflows") {
    write_sizes({2, 3, int64_t{1} << 40, int64_t{1} << 40});
    REQUIRE_THAT(load_error(dir), Contains(sizes.string()) && Contains("which is too large"));
  }
  SECTION("more values than the file holds") {
    write_sizes({2, 3, 5, 3});
    REQUIRE_THAT(load_error(dir), Contains((dir / "j.memmap").string()) && Contains("truncated"));
  }
  SECTION("components that do not match the batch size") {
    write_text(dir / "meta.json", R"({"j": {"device": "cpu", "shape": [2, 2], "dtype": "torch.float32", "is_nested": true}, )"
                                  R"("shape": [3], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>"})");
    REQUIRE_THAT(load_error(dir), Contains((dir / "meta.json").string()) &&
                                      Contains("key 'j' is a nested tensor of shape [2, -1, 3], which does not start with the batch size [3]"));
  }
}
