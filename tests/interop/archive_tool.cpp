// The C++ side of run_archive.py:
//   archive_tool copy <in> <out> [stored|deflate]   load_memmap(in), save(out) (an archive for a .tdz
//                                                    path, else a directory)
//   archive_tool write <out>                         the "nested" case built here (run_archive.py builds it too)
//   archive_tool like <out>                          memmap_like(out) of the "nested" case, then its
//                                                    leaves filled in place: writes reach the archive
//   archive_tool unbatched <dir>                     the "unbatched" case: prints what memmap(dir/m) and
//                                                    save(dir/m.tdz) throw (one line each), writes it to
//                                                    dir/cpp.h5
//   archive_tool h5-memmap <h5> <out>                an h5 file read and memory-mapped into out
#include <tensordict/memmap.h>
#include <nlohmann/json.hpp>
#include <tensordict/persistent.h>
#include <tensordict/tensordict.h>

#include <iostream>
#include <string>

#include "../message_of.h"

using namespace tensordict;

namespace {

// obs = arange(6).reshape(2, 3) float32, ("next", "reward") = arange(2)
// float64 [2, 1], ("next", "done") = [False, True], names ["env"], task "swing".
TensorDict nested() {
  TensorDict td({{"obs", at::arange(6, at::kFloat).reshape({2, 3})},
                 {NestedKey({"next", "reward"}), at::arange(2, at::kDouble).reshape({2, 1})},
                 {NestedKey({"next", "done"}), at::arange(2, at::kLong).to(at::kBool)}},
                {2}, std::nullopt, {"env"});
  td.set_non_tensor("task", "swing");
  return td;
}

// b = arange(6).reshape(2, 3), u = UnbatchedTensor(arange(2.)), batch size [2].
TensorDict unbatched() {
  return TensorDict({{"b", at::arange(6, at::kLong).reshape({2, 3})}, {"u", UnbatchedTensor(at::arange(2, at::kFloat))}},
                    {2});
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string command = argc > 1 ? argv[1] : "";
    if (command == "copy" && (argc == 4 || argc == 5)) {
      MemmapOptions options;
      if (argc == 5 && std::string(argv[4]) == "deflate") options.compression = ArchiveCompression::Deflate;
      TensorDict::load_memmap(argv[2]).save(argv[3], options);
    } else if (command == "write" && argc == 3) {
      nested().save(argv[2]);
    } else if (command == "like" && argc == 3) {
      const TensorDict td = nested();
      TensorDict buffer = td.memmap_like(argv[2]);
      for (const NestedKey& key : td.keys({.include_nested = true, .leaves_only = true})) {
        buffer.get(key).copy_(td.get(key));
      }
    } else if (command == "unbatched" && argc == 3) {
      const std::string dir = argv[2];
      std::cout << td_test::message_of([&] { unbatched().memmap(dir + "/m"); }) << "\n"
                << td_test::message_of([&] { unbatched().save(dir + "/m.tdz"); }) << "\n";
      PersistentTensorDict::from_dict(unbatched(), dir + "/cpp.h5").close();
    } else if (command == "h5-memmap" && argc == 4) {
      PersistentTensorDict::from_h5(argv[2]).to_tensordict().memmap(argv[3]);
    } else {
      std::cerr << "usage: archive_tool copy <in> <out> [stored|deflate] | write <out> | like <out> | unbatched <dir> | "
                   "h5-memmap <h5> <out>\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "archive_tool: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
