// The C++ half of the interop suite (run_interop.py drives it):
//   interop_tool dump <memmap-dir | file.h5>   loads with the runtime, prints canonical JSON
//   interop_tool write <dir>                    writes the C++ cases, and <dir>/manifest.json
//                                               listing them with their canonical JSON
//   interop_tool append <dir> <step>            step 0 writes the append_memmap case at <dir>,
//                                               a later step appends to it; prints the canonical
//                                               JSON of the rows it then holds
//   interop_tool dump_consolidated <file> [<copy>]  reads a consolidated file, prints canonical
//                                               JSON; with <copy>, consolidates it again there
//   interop_tool write_consolidated <dir>       writes the C++ consolidated-file cases and a manifest
//   interop_tool version                        the libtorch version it was built with
#include <torch/version.h>
#include <nlohmann/json.hpp>

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

// Writes the cases `write_cases` writes into `dir` (created), and <dir>/manifest.json listing them.
int write_with_manifest(const std::string& dir,
                        std::vector<interop::WrittenCase> (*write_cases)(const std::filesystem::path&)) {
  fs::create_directories(dir);
  Json manifest = Json::array();
  for (const auto& c : write_cases(dir)) {
    manifest.push_back({{"name", c.name}, {"format", c.format}, {"path", c.path.string()}, {"expected", c.expected}});
  }
  std::ofstream(fs::path(dir) / "manifest.json") << manifest.dump(1) << "\n";
  return 0;
}

int write(const std::string& dir) { return write_with_manifest(dir, interop::write_cases); }

// ---- consolidated files --------------------------------------------------------------
// dump_consolidated <file> [<copy>]: from_consolidated(file)'s canonical JSON;
// with <copy>, also consolidates what it read into that new file.
int dump_consolidated(const std::string& file, const std::string& copy) {
  const tensordict::TensorDict td = tensordict::TensorDict::from_consolidated(file);
  if (!copy.empty()) td.consolidate({.filename = copy});
  std::cout << interop::canonical(td).dump() << "\n";
  return 0;
}

// write_consolidated <dir>: the consolidated-file cases, and <dir>/manifest.json.
int write_consolidated(const std::string& dir) { return write_with_manifest(dir, interop::write_consolidated_cases); }

int usage() {
  std::cerr << "usage: interop_tool dump <memmap-dir|file.h5> | write <dir> | append <dir> <step> | "
               "dump_consolidated <file> [<copy>] | write_consolidated <dir> | version\n";
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
    if (command == "dump_consolidated" && (argc == 3 || argc == 4)) return dump_consolidated(argv[2], argc == 4 ? argv[3] : "");
    if (command == "write_consolidated" && argc == 3) return write_consolidated(argv[2]);
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
