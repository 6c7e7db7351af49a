// to_safetensors / from_safetensors against the behaviour of
// tensordict/_safetensors.py 0.15.3 (its docstrings' examples and messages),
// and hostile files: each refused with the file and the reason. The byte-for-byte checks against tensordict
// 0.15.3 and the safetensors library: tests/interop/run_safetensors.py.
#include <tensordict/safetensors.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "../temp_dir.h"
#include "helpers.h"

using namespace tensordict;
using td_test::iota;
using td_test::same;
using td_test::TempDir;

namespace {

std::string bytes_of(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// A safetensors file of `header` (padded) followed by `data`.
std::string file_of(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

TensorDict sample() {
  TensorDict td({{"obs", iota({2, 3})}, {NestedKey({"next", "reward"}), iota({2, 1}, at::kDouble)},
                 {NestedKey({"next", "done"}), td_test::mask({0, 1})}},
                {2}, std::nullopt, {"env"});
  td.set_non_tensor("task", "swing");
  td.set_non_tensor({"next", "meta"}, Json{{"seed", 3}, {"tags", {"a", "é"}}});
  return td;
}

}  // namespace

TEST_CASE("safetensors: a round trip keeps keys, batch sizes, names, dtypes and non-tensor values") {
  TempDir dir;
  const auto path = (dir / "td.safetensors").string();
  const TensorDict td = sample();
  to_safetensors(td, path);
  const TensorDict back = from_safetensors(path);
  CHECK(back.batch_size().vec() == std::vector<int64_t>{2});
  CHECK((back.names() == td.names()));
  CHECK(same(back.get("obs"), td.get("obs")));
  CHECK(same(back.get({"next", "reward"}), td.get({"next", "reward"})));
  CHECK(same(back.get({"next", "done"}), td.get({"next", "done"})));
  CHECK(back.get_td("next").batch_size().vec() == std::vector<int64_t>{2});
  CHECK(back.get_non_tensor("task") == "swing");
  CHECK(back.get_non_tensor({"next", "meta"}) == td.get_non_tensor({"next", "meta"}));
  // Writing what was read gives the same bytes.
  to_safetensors(back, (dir / "again.safetensors").string());
  CHECK(bytes_of(dir / "again.safetensors") == bytes_of(path));
}

TEST_CASE("safetensors: tensors are stored under their dotted names, the widest dtype first") {
  TempDir dir;
  const auto path = (dir / "td.safetensors").string();
  to_safetensors(TensorDict({{"a", iota({2}, at::kByte)}, {NestedKey({"b", "c"}), iota({2}, at::kLong)},
                             {"d", iota({2}, at::kFloat)}}, {}),
                 path);
  const std::string bytes = bytes_of(path);
  const auto b = bytes.find("\"b.c\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}");
  const auto d = bytes.find("\"d\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]}");
  const auto a = bytes.find("\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[24,26]}");
  CHECK(b != std::string::npos);
  CHECK(d != std::string::npos);
  CHECK(a != std::string::npos);
  CHECK((b < d && d < a));
  CHECK(bytes.size() == 8 + (bytes.size() - 8 - 26) + 26);
  CHECK((bytes.size() - 26 - 8) % 8 == 0);
}

TEST_CASE("safetensors: a lazy stack keeps its stack dim and a tensorclass level its class") {
  TempDir dir;
  const auto path = (dir / "td.safetensors").string();
  LazyStackedTensorDict stack({TensorDict({{"x", iota({3})}}, {3}), TensorDict({{"x", iota({3}) + 10}}, {3})}, 1);
  TensorDict root({{"stack", stack}}, {3});
  root.get_td("stack").set_non_tensor(std::string(kLoadedClassKey), "<class 'rl.Step'>");
  to_safetensors(root, path);
  const TensorDict back = from_safetensors(path);
  CHECK(back.get_td("stack").kind() == Kind::LazyStack);
  CHECK(LazyStackedTensorDict(back.get_td("stack")).stack_dim() == 1);
  CHECK(same(back.get({"stack", "x"}), stack.get("x")));
  CHECK(back.get_td("stack").get_non_tensor(std::string(kLoadedClassKey)) == "<class 'rl.Step'>");
}

TEST_CASE("safetensors: a file from elsewhere loads nested by its dotted names, batch size [], on the device asked") {
  TempDir dir;
  const auto path = dir / "model.safetensors";
  std::string data(16 + 8, '\0');
  const float w[4] = {1, 2, 3, 4};
  const double b[1] = {5};
  std::memcpy(data.data(), w, 16);
  std::memcpy(data.data() + 16, b, 8);
  write_bytes(path, file_of(R"({"0.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                            R"("0.bias":{"dtype":"F64","shape":[1],"data_offsets":[16,24]}})",
                            data));
  const TensorDict td = from_safetensors(path.string(), at::Device(at::kCPU));
  CHECK(td.batch_size().empty());
  CHECK(td.device() == at::Device(at::kCPU));
  CHECK(same(td.get({"0", "weight"}), at::tensor({1.f, 2.f, 3.f, 4.f}).reshape({2, 2})));
  CHECK(same(td.get({"0", "bias"}), at::tensor({5.0}, at::kDouble)));
}

TEST_CASE("safetensors: what safetensors cannot hold is refused by key, with tensordict's messages") {
  TempDir dir;
  const auto path = (dir / "td.safetensors").string();
  TensorDict stack_of_strings({{"x", iota({2})}}, {2});
  stack_of_strings.set("label", NonTensorData::stack({"a", "b"}, {2}));
  CHECK(TD_MESSAGE(to_safetensors(stack_of_strings, path)) ==
        "Cannot save the non-tensor stack at ('label',) as safetensors: only single JSON values are supported.");
  TensorDict clash({{"a.b", iota({1})}, {NestedKey({"a", "b"}), iota({1})}}, {});
  CHECK(TD_MESSAGE(to_safetensors(clash, path)) == "Two keys of the tensordict have the safetensors name 'a.b'.");
  TensorDict wide({{"c", at::zeros({2}, at::kComplexDouble)}}, {});
  CHECK(TD_MESSAGE(to_safetensors(wide, path)) ==
        "Cannot save the tensor at ('c',) as safetensors: dtype ComplexDouble has no safetensors name here (supported: "
        "BOOL, U8, I8, I16, F16, BF16, I32, F32, C64, F64, I64)");
  LazyStackedTensorDict ragged({TensorDict({{"x", iota({1})}}, {1}), TensorDict({{"y", iota({1})}}, {1})});
  CHECK(TD_MESSAGE(to_safetensors(ragged, path)) ==
        "Cannot save the lazy stack at the root as safetensors: its entries have different keys. Give every entry the "
        "same keys first.");
  CHECK(!std::filesystem::exists(path));
}

TEST_CASE("hostile: a safetensors file that lies is refused, naming the file and the reason") {
  TempDir dir;
  const auto path = dir / "bad.safetensors";
  const std::string prefix = "cannot load the safetensors file " + path.string() + ": ";
  auto refused = [&](const std::string& bytes, const std::string& expected) {
    write_bytes(path, bytes);
    CHECK(TD_MESSAGE(from_safetensors(path.string())) == prefix + expected);
  };
  const std::string four(4, '\0');
  SECTION("too short, or a header past the file or the bound") {
    refused("abc", "3 bytes, fewer than the 8 of the header's length");
    refused(std::string("\x10\0\0\0\0\0\0\0{}", 10), "a header of 16 bytes in a file of 10");
    refused(std::string("\0\0\0\0\0\0\0\x01", 8), "a header of 72057594037927936 bytes, more than the 100000000 allowed");
  }
  SECTION("a header that is no object, or entries without their fields") {
    refused(file_of("[1]", ""), "the header is a JSON array, expected an object");
    refused(file_of(R"({"x":{"dtype":"F32","shape":[1]}})", four), "the entry of tensor 'x' lacks dtype, shape or data_offsets");
    refused(file_of(R"({"x":{"dtype":"F128","shape":[1],"data_offsets":[0,4]}})", four),
            "tensor 'x' has dtype \"F128\"; supported: BOOL, U8, I8, I16, F16, BF16, I32, F32, C64, F64, I64");
    refused(file_of(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", four),
            "tensor 'x' has shape [-1], expected a list of sizes");
  }
  SECTION("offsets that lie about the bytes") {
    refused(file_of(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", four),
            "tensor 'x' of shape [2] and dtype F32 needs 8 bytes, but its data_offsets [0,4] hold 4");
    refused(file_of(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                    std::string(6, '\0')),
            "tensor 'y' starts at byte 2 of the data, where 4 was expected (overlapping or missing bytes)");
    refused(file_of(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::string(12, '\0')),
            "its tensors hold 4 bytes, but the file has 12 after the header");
    refused(file_of(R"({"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})", four),
            "tensor 'x' has shape [4611686018427387904,4], too large");
  }
  SECTION("tensordict metadata that disagrees with the tensors") {
    const std::string tensors = R"("x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
    auto with_meta = [&](const std::string& meta) {
      return file_of(R"({"__metadata__":{"tensordict":")" + meta + "\"}," + tensors + "}", four);
    };
    refused(with_meta(R"({\"version\": 2, \"root\": {}})"),
            "its tensordict metadata has version 2, and this reader reads version 1");
    refused(with_meta(R"({\"version\": 1, \"root\": {\"batch_size\": [], \"names\": null, \"keys\": {\"x\": {\"tensor\": \"y\"}}}})"),
            "its tensordict metadata names the tensor 'y', which the file lacks");
    refused(with_meta(R"({\"version\": 1, \"root\": {\"batch_size\": [], \"names\": null, \"keys\": {}}})"),
            "the tensors 'x' are not in its tensordict metadata");
    refused(with_meta(R"({\"version\": 1, \"root\": {\"batch_size\": [3], \"names\": null, \"keys\": {\"x\": {\"tensor\": \"x\"}}}})"),
            "the entry of 'x' does not fit its level: " +
                TD_MESSAGE(TensorDict({}, {3}).set("x", at::zeros({1}))));
    refused(with_meta(R"({\"version\": 1, \"root\": {\"batch_size\": [1], \"names\": null, \"stack_dim\": 4, \"keys\": {\"x\": {\"tensor\": \"x\"}}}})"),
            "the root has stack_dim 4 for 1 batch dims");
    // No tensor backs a batch size: a lazy stack of 2^62 members is refused, not built.
    refused(file_of(R"({"__metadata__":{"tensordict":"{\"version\": 1, \"root\": {\"batch_size\": [4611686018427387904], )"
                    R"(\"names\": null, \"stack_dim\": 0, \"keys\": {}}}"}})", ""),
            "the root stacks 4611686018427387904 members, more than the 1048576 read here");
  }
  SECTION("not a file") {
    std::filesystem::create_directories(path);
    CHECK(TD_MESSAGE(from_safetensors(path.string())) == prefix + "not a regular file");
  }
}
