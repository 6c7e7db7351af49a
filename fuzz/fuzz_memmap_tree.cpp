// Fuzzes loading whole memmap trees: the input drives a small program that
// builds a directory (levels of every kind with keys, batch shapes, leaf
// entries and data files of chosen sizes, nested and lazy levels, NonTensor
// data and stacks of chosen depth, and hostile entries: symbolic links inside
// and out of the tree, hard links to the file outside it (and from a staging
// directory beside it, as a rewrite leaves them), FIFOs, directories where
// files belong), then loads it.
//
// Loading must either throw a std::exception with a message, or give a tree
// that every walk handles: each leaf read in full, reshape({-1}) and index
// where the batch allows, apply, clone, repr, lock, a memmap round trip. No
// byte of the file outside the tree may show up in what was loaded.
#include <ATen/ATen.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_bytes.h"
#include "fuzz_scratch.h"
#include "tensordict/tensordict.h"

namespace fs = std::filesystem;

namespace {

// Non-tensor entries too: a round trip keeps them.
constexpr tensordict::KeysOptions kLeaves{
    .include_nested = true, .leaves_only = true, .is_leaf = tensordict::IsLeaf::NonTensor};

constexpr const char* kOutside = "OUTSIDE!";  // the bytes of the file outside the tree

// Replaces what a hostile entry may have put at `path` first: writing into
// a FIFO would block the builder, and through a link would change the file
// outside the tree. A non-empty directory stays (the write then fails).
void write(const fs::path& path, const std::string& content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::remove(path, ec);
  std::ofstream(path, std::ios::binary) << content;
}

const char* const kDtypes[] = {"torch.float32", "torch.int64", "torch.uint8", "torch.bool", "torch.float16",
                               "torch.complex64", "torch.bogus"};
const char* const kKeys[] = {"a", "b", "0", "1", "_tensordict", "shape", "%2E", "x y", "meta.json", "n"};

struct Builder {
  fuzz::Bytes& in;
  const fs::path& root;  // holds the tree (root/t) and the file outside it

  std::string shape_json(std::size_t dims) {
    std::string s = "[";
    for (std::size_t i = 0; i < dims; ++i) {
      if (i) s += ", ";
      const auto v = in.small(0, 9);
      s += v == 9 ? "-1" : std::to_string(v % 4);
    }
    return s + "]";
  }

  // A JSON value nested `depth` lists deep (NonTensor data).
  std::string data_json(int depth) {
    if (depth == 0) return in.next() % 2 ? "\"s\"" : std::to_string(in.small(0, 9));
    std::string s = "[";
    const auto n = in.small(0, 3);
    for (int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + data_json(depth - 1);
    return s + "]";
  }

  void hostile_entry(const fs::path& path) {
    std::error_code ec;
    switch (in.small(0, 5)) {
      case 0: fs::create_symlink(root / "outside.bin", path, ec); break;
      case 1: fs::create_directory_symlink(root / "t", path, ec); break;
      case 2: ::mkfifo(path.c_str(), 0600); break;
      case 3: fs::create_hard_link(root / "outside.bin", path, ec); break;
      case 4: {
        // A leaf also linked from a staging directory beside the tree (as a
        // rewrite leaves it), or from one and from outside the tree.
        write(path, std::string(16, '\x01'));
        const fs::path staging = root / ".t.tc-staging.1" / fs::relative(path, root / "t");
        fs::create_directories(staging.parent_path(), ec);
        fs::create_hard_link(path, staging, ec);
        if (in.next() % 2) fs::create_hard_link(path, root / ("outside-link." + std::to_string(in.next())), ec);
        break;
      }
      default: fs::create_directories(path, ec); break;
    }
  }

  void level(const fs::path& dir, int depth) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    const auto kind = in.small(0, 9);
    if (kind == 8 && depth < 4) {  // a lazy stack
      const auto members = in.small(0, 3);
      for (int64_t i = 0; i < members; ++i) level(dir / std::to_string(i), depth + 1);
      write(dir / "meta.json", R"({"_type": "<class 'tensordict._lazy.LazyStackedTensorDict'>", "stack_dim": )" +
                                   std::to_string(in.small(-1, 2)) + "}");
      return;
    }
    if (kind == 9) {  // non-tensor data or a stack, when the parent says so
      const int d = static_cast<int>(in.small(0, 3));
      write(dir / "meta.json", std::string(R"({"_type": "<class 'tensordict.tensorclass.)") +
                                   (in.next() % 2 ? "NonTensorStack" : "NonTensorData") +
                                   R"('>", "stack_dim": 0, "data": )" + data_json(d) + "}");
      return;
    }
    const std::size_t batch_dims = static_cast<std::size_t>(in.small(0, 2));
    std::string entries;
    const auto n = in.small(0, 4);
    for (int64_t i = 0; i < n; ++i) {
      const std::string key = kKeys[in.small(0, 9)];
      const std::string file_key = key == "x y" ? "x%20y" : key;
      if (!entries.empty()) entries += ", ";
      switch (in.small(0, 5)) {
        case 0:
        case 1: {
          const std::string shape = shape_json(batch_dims + static_cast<std::size_t>(in.small(0, 2)));
          entries += "\"" + key + R"(": {"device": "cpu", "shape": )" + shape + R"(, "dtype": ")" + kDtypes[in.small(0, 6)] +
                     R"(", "is_nested": false})";
          const auto bytes = in.small(0, 64);
          if (in.next() % 4 == 0) {
            hostile_entry(dir / (file_key + ".memmap"));
          } else {
            write(dir / (file_key + ".memmap"), std::string(static_cast<std::size_t>(bytes), '\x01'));
          }
          break;
        }
        case 2:
        case 3:
          entries += "\"" + key + R"(": {"type": "TensorDict"})";
          if (depth < 4) level(dir / file_key, depth + 1);
          break;
        case 4:
          entries += "\"" + key + R"(": {"type": ")" + (in.next() % 2 ? "NonTensorStack" : "NonTensorData") + "\"}";
          if (depth < 4) level(dir / file_key, depth + 1);
          break;
        default:
          entries += "\"" + key + R"(": {"type": "TensorDict"})";
          hostile_entry(dir / file_key);
          break;
      }
    }
    const std::string shape = shape_json(batch_dims);
    if (in.next() % 8 == 0) {
      hostile_entry(dir / "meta.json");
      return;
    }
    write(dir / "meta.json", "{" + entries + (entries.empty() ? "" : ", ") + "\"shape\": " + shape +
                                 R"(, "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>"})");
  }
};

void check_no_outside_bytes(const at::Tensor& t) {
  const at::Tensor bytes = t.contiguous().view({-1}).view(at::kByte);
  const std::string text(static_cast<const char*>(bytes.data_ptr()), static_cast<std::size_t>(bytes.numel()));
  if (text.find("OUTSIDE") != std::string::npos) {
    std::fprintf(stderr, "fuzz_memmap_tree: a leaf holds bytes of the file outside the tree\n");
    std::abort();
  }
}

void exercise(const tensordict::TensorDict& td, const fs::path& root) {
  for (const auto& key : td.keys(kLeaves)) {
    auto value = td.get_value(key);
    if (value && value->is_tensor() && value->tensor().numel() > 0) check_no_outside_bytes(value->tensor());
  }
  std::ostringstream os;
  os << td;
  auto run = [](auto&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      if (std::string(e.what()).empty()) std::abort();
    }
  };
  run([&] { (void)td.reshape({-1}); });
  run([&] { if (td.batch_dims() > 0 && td.batch_size()[0] > 0) (void)td.index({0}); });
  run([&] { (void)td.apply([](const at::Tensor& t) { return t * 1; }); });
  run([&] { (void)td.clone(); });
  run([&] {
    auto copy = td.clone();
    copy.lock_();
    copy.unlock_();
  });
  run([&] {
    if (td.kind() != tensordict::Kind::Dense) return;
    auto again = tensordict::TensorDict(td).memmap((root / "again").string());
    auto back = tensordict::load_memmap((root / "again").string());
    if (back.keys(kLeaves) != td.keys(kLeaves)) {
      std::fprintf(stderr, "fuzz_memmap_tree: round trip changed the keys\n");
      std::abort();
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path& root = fuzz::fresh_scratch_root("tc_fuzz_tree");
  write(root / "outside.bin", std::string(kOutside) + std::string(kOutside) + std::string(kOutside));
  fuzz::Bytes in{data, size};
  Builder{in, root}.level(root / "t", 0);
  try {
    exercise(tensordict::load_memmap((root / "t").string()), root);
  } catch (const std::exception& e) {
    if (std::string(e.what()).empty()) std::abort();
  }
  return 0;
}
