// The pickle subset that carries tensordict's metadata between ranks
// (runtime/src/distributed/pickle.h): pickles Python made read as the same
// values, what C++ writes is byte for byte what Python writes once
// pickletools.optimize drops its unused memo entries, and every refusal says
// where and why.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <string>

#include "../message_of.h"
#include "distributed/pickle.h"

namespace pickle = tensordict::dist::pickle;
using Json = pickle::Json;
using td_test::message_of;

namespace {

std::string unhex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

// PROTO 4, FRAME of the right length, then `body` (which ends with STOP).
std::string framed(const std::string& body) {
  std::string out = "\x80\x04\x95";
  auto n = static_cast<uint64_t>(body.size());
  for (int i = 0; i < 8; ++i, n >>= 8) out.push_back(static_cast<char>(n & 0xff));
  return out + body;
}

const Json kMeta = Json::parse(R"({"cls": "TensorDict", "non_tensors": {"s": ["hi", [2], null]},
  "leaves": {"a": ["torch.float32", [2], 0, 8, 0]},
  "cls_metadata": {"device": null, "names": [null], "batch_size": [2], "is_locked": false}, "_total_bytes": 8})",
                                 nullptr, true, false);

// The peak resident memory (VmHWM) `f` adds to this process, in MiB: the
// peak is reset first (clear_refs 5).
template <class F>
double peak_mib_of(F&& f) {
  const auto hwm_kib = [] {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6));
    }
    return 0.0;
  };
  const auto rss_kib = [] {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6));
    }
    return 0.0;
  };
  std::ofstream("/proc/self/clear_refs") << "5";
  const double before = rss_kib();
  f();
  return (hwm_kib() - before) / 1024;
}

}  // namespace

TEST_CASE("pickle: tensordict's metadata as Python pickles it reads as the same dict", "[distributed][pickle]") {
  // Python 3.11: pickle.dumps({'cls': 'TensorDict', 'non_tensors': {'s': ('hi', [2], None)},
  //   'leaves': {'a': ('torch.float32', [2], 0, 8, 0)}, 'cls_metadata': {'device': None, 'names': [None],
  //   'batch_size': [2], 'is_locked': False}, '_total_bytes': 8}).hex()
  const std::string bytes = unhex(
      "800495c1000000000000007d94288c03636c73948c0a54656e736f7244696374948c0b6e6f6e5f74656e736f7273947d948c0173948c02"
      "6869945d944b02614e8794738c066c6561766573947d948c016194288c0d746f7263682e666c6f61743332945d944b02614b004b084b0074"
      "94738c0c636c735f6d65746164617461947d94288c06646576696365944e8c056e616d6573945d944e618c0a62617463685f73697a6594"
      "5d944b02618c0969735f6c6f636b65649489758c0c5f746f74616c5f6279746573944b08752e");
  const Json got = pickle::loads(bytes, "test");
  CHECK(got.dump() == kMeta.dump());
}

TEST_CASE("pickle: C++ writes the metadata as Python does, tuples where Python has tuples", "[distributed][pickle]") {
  // Python 3.11: pickletools.optimize(pickle.dumps(<the dict above>)).hex()
  const std::string python = unhex(
      "800495a9000000000000007d288c03636c738c0a54656e736f72446963748c0b6e6f6e5f74656e736f72737d8c01738c0268695d4b0261"
      "4e87738c066c65617665737d8c0161288c0d746f7263682e666c6f617433325d4b02614b004b084b0074738c0c636c735f6d6574616461"
      "74617d288c066465766963654e8c056e616d65735d4e618c0a62617463685f73697a655d4b02618c0969735f6c6f636b656489758c0c5f"
      "746f74616c5f62797465734b08752e");
  CHECK(pickle::dumps(kMeta, pickle::Layout::ConsolidatedMetadata, "test") == python);
}

TEST_CASE("pickle: ints of every width, floats, bools, None, str, tuples", "[distributed][pickle]") {
  // Python 3.11: pickletools.optimize(pickle.dumps([0, 255, 256, 65536, -1, 2**31, -2**63, 2**63-1, 1.5, True,
  //   None, 'é', (), (1,), (1, 2, 3, 4)])).hex()
  const std::string python = unhex(
      "8004954d000000000000005d284b004bff4d00014a000001004affffffff8a0500000080008a0800000000000000808a08ffffffffffff"
      "ff7f473ff8000000000000884e8c02c3a9294b0185284b014b024b034b0474652e");
  const Json got = pickle::loads(python, "test");
  const Json want = Json::parse(R"([0, 255, 256, 65536, -1, 2147483648, -9223372036854775808, 9223372036854775807,
                                   1.5, true, null, "é", [], [1], [1, 2, 3, 4]])");
  CHECK(got.dump() == want.dump());
  // Written back (lists, as Plain has no tuples), it reads back the same.
  CHECK(pickle::loads(pickle::dumps(got, pickle::Layout::Plain, "test"), "test").dump() == want.dump());
}

TEST_CASE("pickle: a container shared through the memo is the same value twice", "[distributed][pickle]") {
  // Python 3.11: l = [1]; pickle.dumps({'a': l, 'b': l}).hex()
  const Json got = pickle::loads(unhex("80049514000000000000007d94288c0161945d944b01618c0162946802752e"), "test");
  CHECK(got.dump() == R"({"a":[1],"b":[1]})");
}

TEST_CASE("pickle: a nested tensorclass's class reference reads as its class name, and writes back as one",
          "[distributed][pickle]") {
  // {"cls": <class 'tc.rl.Observation'>}: SHORT_BINUNICODE module, name, STACK_GLOBAL.
  const std::string body = "}\x8c\x03" "cls\x8c\x05tc.rl\x8c\x0bObservation\x93s.";
  const Json got = pickle::loads(framed(body), "test");
  CHECK(got.dump() == R"({"cls":"<class 'tc.rl.Observation'>"})");
  CHECK(pickle::dumps(got, pickle::Layout::ConsolidatedMetadata, "test") == framed(body));
}

TEST_CASE("pickle: refusals name the call, the byte offset and the opcode", "[distributed][pickle]") {
  const auto refused = [](const std::string& bytes) {
    return message_of([&] { pickle::loads(bytes, "from_remote_init from rank 1"); });
  };
  // GLOBAL 'os system' then REDUCE: the classic exploit.
  CHECK(refused(framed("cos\nsystem\n(S'true'\ntR.")) ==
        "from_remote_init from rank 1: malformed pickle at byte 11 (opcode 0x63): this opcode is outside the subset "
        "tensordict's metadata uses (dict, list, tuple, str, int, float, bool, None)");
  CHECK(refused(framed("\x8c\x0a" "ab.")) ==
        "from_remote_init from rank 1: malformed pickle at byte 11 (opcode 0x8c): needs 10 more bytes, but the "
        "message has 3 left");
  CHECK(refused(framed("]\x8c\x02os\x8c\x06system\x93" "a.")) ==
        "from_remote_init from rank 1: refused pickle: a class reference os.system outside a \"cls\" entry");
  CHECK(refused(framed(std::string(300, '(') + ".")) ==
        "from_remote_init from rank 1: malformed pickle at byte 267 (opcode 0x28): marks nest deeper than 256");
  CHECK(refused(framed(std::string(300, ']') + std::string(299, 'a') + ".")) ==
        "from_remote_init from rank 1: refused pickle: the value nests deeper than 256 levels (or holds itself)");
  // A list that holds itself.
  CHECK(refused(framed(std::string("]\x94h\x00" "a.", 6))) ==
        "from_remote_init from rank 1: refused pickle: the value nests deeper than 256 levels (or holds itself)");
  // Each level holds the previous twice, and an outer list holds every
  // level: 2^40 elements from 300 bytes.
  std::string laughs = "]]K\x01" "a\x94" "a";
  for (int i = 0; i < 40; ++i) laughs += "](h" + std::string(1, char(i)) + "h" + std::string(1, char(i)) + "e\x94" "a";
  CHECK(refused(framed(laughs + ".")).find("shared references expand the value past") != std::string::npos);
  CHECK(refused(framed("\x8a\x09" + std::string(8, '\0') + "\x01.")) ==
        "from_remote_init from rank 1: malformed pickle at byte 11 (opcode 0x8a): an integer of 9 bytes, wider than "
        "the 64 bits this reader holds");
  CHECK(refused(framed("\x8c\x02\xc3\x28.")) ==
        "from_remote_init from rank 1: malformed pickle at byte 11 (opcode 0x8c): a str that is not valid UTF-8 (byte "
        "1 of it)");
  CHECK(refused(framed("}K\x01K\x02s.")) == "from_remote_init from rank 1: refused pickle: a dict key that is not a str");
  CHECK(refused(framed("N")) ==
        "from_remote_init from rank 1: malformed pickle at byte 12 (opcode 0x00): the message ends before STOP");
  CHECK(refused(framed("N.N")) ==
        "from_remote_init from rank 1: malformed pickle at byte 12 (opcode 0x2e): 1 bytes follow STOP");
  CHECK(refused(framed("NN.")) ==
        "from_remote_init from rank 1: malformed pickle at byte 13 (opcode 0x2e): STOP leaves values or marks on the "
        "stack");
  CHECK(refused(framed("h\x05.")) ==
        "from_remote_init from rank 1: malformed pickle at byte 11 (opcode 0x68): reads memo entry 5, which was never "
        "stored");
  CHECK(refused(framed("a.")) == "from_remote_init from rank 1: malformed pickle at byte 11 (opcode 0x61): the stack is empty");
  CHECK(refused(framed("NNa.")) ==
        "from_remote_init from rank 1: malformed pickle at byte 13 (opcode 0x61): appends to something that is not a "
        "list");
  CHECK(refused(framed("NNNs.")) ==
        "from_remote_init from rank 1: malformed pickle at byte 14 (opcode 0x73): sets an item of something that is "
        "not a dict");
  CHECK(refused(framed("}(Nu.")) ==
        "from_remote_init from rank 1: malformed pickle at byte 14 (opcode 0x75): an odd number of keys and values");
  CHECK(refused(framed("e.")) == "from_remote_init from rank 1: malformed pickle at byte 11 (opcode 0x65): no MARK precedes it");
  CHECK(refused(framed("N\x8c\x01" "a\x93.")) ==
        "from_remote_init from rank 1: malformed pickle at byte 15 (opcode 0x93): a class reference whose module and "
        "name are not strings");
  CHECK(refused(std::string("\x80\x06N.", 4)) ==
        "from_remote_init from rank 1: malformed pickle at byte 0 (opcode 0x80): protocol 6 (expected 2 to 5)");
}

TEST_CASE("pickle: values the subset cannot write are refused, naming the call", "[distributed][pickle]") {
  CHECK(message_of([] {
          pickle::dumps(Json{{"cls", "<class 'NoModule'>"}}, pickle::Layout::ConsolidatedMetadata, "init_remote to rank 1");
        }) == "init_remote to rank 1: \"cls\" <class 'NoModule'> names no module");
  CHECK(message_of([] { pickle::dumps(Json::binary({1, 2}), pickle::Layout::Plain, "send_object_list to rank 1"); }) ==
        "send_object_list to rank 1: a binary value has no pickle form in the subset");
}

TEST_CASE("pickle: memory while reading is bounded per byte of the message", "[distributed][pickle][hostile]") {
  // 8 MB of EMPTY_LIST: each once cost about 125 bytes (20 MB reached 2.86 GB);
  // the stack now refuses past 2^20 values waiting on it.
  const std::string lists = framed(std::string(8 << 20, ']') + ".");
  std::string message;
  const double lists_mib = peak_mib_of([&] { message = message_of([&] { pickle::loads(lists, "recv_object_list from rank 1"); }); });
  CHECK(message == "recv_object_list from rank 1: malformed pickle at byte 1048587 (opcode 0x5d): more than 1048576 "
                   "values wait on the stack");
  CHECK(lists_mib < 128);
  // 8 MB of MEMOIZE, a memo entry per byte: 8 bytes each.
  const std::string memos = framed("N" + std::string(8 << 20, '\x94') + ".");
  Json value;
  const double memos_mib = peak_mib_of([&] { value = pickle::loads(memos, "test"); });
  CHECK(value.is_null());
  CHECK(memos_mib < 128);
}

TEST_CASE("pickle: a dict of 100,000 keys reads in linear time, repeated keys as Python's dict",
          "[distributed][pickle][hostile]") {
  // {'k0': 0, 'k1': 1, ...} by SETITEM, then 'k0' again: first position, last value.
  std::string body = "}";
  const auto key = [](int i) {
    const std::string k = "k" + std::to_string(i);
    return "\x8c" + std::string(1, static_cast<char>(k.size())) + k;
  };
  constexpr int kKeys = 100000;
  for (int i = 0; i < kKeys; ++i) body += key(i) + "J" + std::string(reinterpret_cast<const char*>(&i), 4) + "s";
  body += key(0) + "K\x07s.";
  const auto start = std::chrono::steady_clock::now();
  const Json got = pickle::loads(framed(body), "test");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(got.size() == kKeys);
  CHECK(got.begin().key() == "k0");
  CHECK(got["k0"] == 7);
  CHECK(got["k99999"] == 99999);
  CHECK(seconds < 1.0);  // was 7.1 s (quadratic)
}
