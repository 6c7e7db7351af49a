// The C++ half of the interop suite (run_interop.py drives it):
//   interop_tool dump <memmap-dir | file.h5>   loads with the runtime, prints canonical JSON
//   interop_tool write <dir>                    writes the C++ cases, and <dir>/manifest.json
//                                               listing them with their canonical JSON
//   interop_tool append <dir> <step>            step 0 writes the append_memmap case at <dir>,
//                                               a later step appends to it; prints the canonical
//                                               JSON of the rows it then holds
//   interop_tool version                        the libtorch version it was built with
#include <torch/version.h>

#include <exception>
#include <fstream>
#include <iostream>
#include <string>

#include <tensordict/memmap.h>
#include <tensordict/persistent.h>

#include "append_cases.h"
#include "canonical.h"
#include "cpp_cases.h"

namespace {

namespace fs = std::filesystem;
using tensordict::Json;

int dump(const std::string& path) {
  const bool h5 = fs::path(path).extension() == ".h5";
  const Json out = h5 ? interop::canonical(tensordict::PersistentTensorDict::from_h5(path))
                      : interop::canonical(tensordict::load_memmap(path));
  std::cout << out.dump() << "\n";
  return 0;
}

int write(const std::string& dir) {
  fs::create_directories(dir);
  Json manifest = Json::array();
  for (const auto& c : interop::write_cases(dir)) {
    manifest.push_back({{"name", c.name}, {"format", c.format}, {"path", c.path.string()}, {"expected", c.expected}});
  }
  std::ofstream(fs::path(dir) / "manifest.json") << manifest.dump(1) << "\n";
  return 0;
}

int usage() {
  std::cerr << "usage: interop_tool dump <memmap-dir|file.h5> | write <dir> | append <dir> <step> | version\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string command = argv[1];
  try {
    if (command == "dump" && argc == 3) return dump(argv[2]);
    if (command == "write" && argc == 3) return write(argv[2]);
    if (command == "append" && argc == 4) {
      std::cout << interop::append_step(argv[2], std::stoi(argv[3])).dump() << "\n";
      return 0;
    }
    if (command == "version" && argc == 2) {
      std::cout << TORCH_VERSION << "\n";
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "interop_tool " << command << ": " << e.what() << "\n";
    return 1;
  }
  return usage();
}
