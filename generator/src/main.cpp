// tensorclass-gen: compiles tensorclass schemas (YAML or annotated C++
// headers) into C++ headers.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "tcgen/driver.h"
#include "tcgen/ir_json.h"

namespace {

void print_diagnostics(const tcgen::Error& e) {
  for (const auto& d : e.diagnostics()) std::cerr << d.str() << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "tensorclass-gen: compiles tensorclass schemas into C++ headers or Python modules.\n"
      "Each <schema> is a YAML schema (.yaml/.yml) or an annotated C++ header\n"
      "(.h/.hpp/.hh/.hxx); <schema>.yaml produces <out-dir>/<schema>.tc.h and\n"
      "<schema>.tc.cpp (the typed engine, compiled once: add it to the build), or with\n"
      "--lang python the package <out-dir>/<python module as a path>/__init__.py.\n"
      "Nothing is written when any schema has an error.",
      "tensorclass-gen"};
  tcgen::RunOptions options;
  bool dump_ir = false;
  bool dump_locations = false;
  std::string templates_dir;
  std::string stamp;
  app.set_version_flag("--version", std::string("tensorclass-gen ") + TCGEN_VERSION);

  app.add_option("schemas", options.inputs, "Schema files (YAML or annotated C++ headers)")
      ->required()
      ->type_name("<schema>...");
  app.add_option("-o,--out-dir", options.out_dir, "Directory the generated headers are written to")
      ->required()
      ->type_name("DIR");
  app.add_flag("--dump-ir", dump_ir,
               "Print the validated schema IR of every input as JSON on stdout (files are still written)");
  app.add_flag("--dump-ir-locations", dump_locations, "With --dump-ir: include file/line/column of classes and fields");
  app.add_option("-I,--include-dir", options.header.include_dirs,
                 "Header frontend: add DIR to clang's include path (repeatable)")
      ->type_name("DIR")
      ->allow_extra_args(false);
  app.add_option("-D,--define", options.header.defines,
                 "Header frontend: define a macro for clang, NAME or NAME=VALUE (repeatable)")
      ->type_name("NAME[=VALUE]")
      ->allow_extra_args(false);
  app.add_option("--depfile", options.depfile,
                 "Write a Makefile-style depfile (the generated headers depend on the schemas and all their imports)")
      ->type_name("FILE");
  app.add_option("--lang", options.language, "What to generate: cpp (headers, the default) or python (@tensorclass modules)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, tcgen::Language>{{"cpp", tcgen::Language::Cpp}, {"python", tcgen::Language::Python}}))
      ->type_name("cpp|python");
  app.add_option("--python-form", options.emit.python_form,
                 "With --lang python, the form of every schema's classes (and of their imports'), whatever their "
                 "python_form says: tensorclass (@tensorclass), typed_tensordict (TypedTensorDict subclasses) or both "
                 "(the TypedTensorDicts in the submodule <python_module>.typed)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, tcgen::PythonForm>{
          {"tensorclass", tcgen::PythonForm::Tensorclass},
          {"typed_tensordict", tcgen::PythonForm::TypedTensorDict},
          {"both", tcgen::PythonForm::Both}}))
      ->type_name("tensorclass|typed_tensordict|both");
  app.add_option("--stamp", stamp,
                 "After a successful run write FILE, listing the files generated; the depfile then names FILE as the "
                 "target (a build rule's output when the outputs' names come from the schemas, as Python modules' do)")
      ->type_name("FILE");
  app.add_option("--templates", templates_dir,
                 "Render with tensorclass.h.mustache (tensorclass.py.mustache) from DIR instead of the template built into the generator")
      ->type_name("DIR");

  CLI11_PARSE(app, argc, argv);
  if (!templates_dir.empty()) options.emit.templates_dir = templates_dir;
  if (options.emit.python_form && options.language != tcgen::Language::Python) {
    std::cerr << "tensorclass-gen: error: --python-form applies to Python modules: add --lang python\n";
    return 1;
  }

  try {
    std::vector<std::string> deps;
    std::vector<tcgen::Schema> schemas;
    std::vector<tcgen::GeneratedFile> files = tcgen::generate(options, &deps, &schemas);
    if (dump_ir) {
      nlohmann::json all = nlohmann::json::array();
      for (const auto& schema : schemas) all.push_back(tcgen::to_json(schema, dump_locations));
      std::cout << (all.size() == 1 ? all[0] : all).dump(2) << '\n';
    }
    std::vector<std::string> targets;
    std::string listing;
    for (const auto& f : files) {
      tcgen::write_file_atomically(f.path, f.content);
      targets.push_back(f.path);
      listing += f.path + "\n";
    }
    if (!stamp.empty()) {
      // Rewritten every run: a build system compares its time with the inputs'.
      std::filesystem::remove(stamp);
      tcgen::write_file_atomically(stamp, listing);
      targets = {stamp};
    }
    if (!options.depfile.empty())
      tcgen::write_file_atomically(options.depfile, tcgen::make_depfile(targets, deps));
  } catch (const tcgen::Error& e) {
    print_diagnostics(e);
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "tensorclass-gen: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
