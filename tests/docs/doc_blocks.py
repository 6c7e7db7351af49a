#!/usr/bin/env python3
"""The documentation's code blocks, compiled and run.

Every fenced ```cpp and ```python block of README.md and docs/*.md is one of:

- a complete program (C++: it has `int main(`): compiled; run when tagged
  `<!-- doc: run -->` on the line before its fence;
- a fragment (the default): compiled as the body of a function, its
  `#include` lines hoisted to the top of the file. Variables it uses without
  declaring them are the function's parameters, declared in its tag:
  `<!-- doc: compile given=TensorDict td_a, TensorDict td_b -->`. A fragment
  tagged `run` (without `given`) is also called;
- an excerpt of a file of the repository that is itself built or run:
  `<!-- doc: excerpt examples/deploy/run_policy.cpp -->`: every line of the
  block (but `...` and `// ...` lines) appears in that file, in order;
- skipped, with a reason: `<!-- doc: skip REASON -->`.

A tag may add `needs=A,B`: what the block needs beyond the runtime (nn,
distributed, aoti, arrow, or a schema's generated header: rl, robot,
rollout). Most are read from the block's includes. C++ blocks are compiled
by the CMake target `doc_blocks` (tests/docs/CMakeLists.txt), one file per
set of needs, with `#line` directives: a compile error names the page and
the line. Blocks whose needs the build lacks (aoti and arrow in a build
without them) are left out of that build.

    doc_blocks.py generate ROOT OUT_DIR HAVE   # HAVE: comma-separated needs the build has
    doc_blocks.py check ROOT [--python PY]     # excerpts, the reference page, Python blocks
    doc_blocks.py count ROOT                   # how many blocks of each kind
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

GROUPS = ("runtime", "nn", "distributed", "aoti", "arrow")
SCHEMAS = ("rl", "robot", "rollout")
INCLUDE_NEEDS = (
    (re.compile(r"<tensordict/nn/aoti\.h>"), "aoti"),
    (re.compile(r"<tensordict/(nn\.h|nn/)|<torch/torch\.h>"), "nn"),
    (re.compile(r"<tensordict/distributed\.h>"), "distributed"),
    (re.compile(r"<tensordict/arrow\.h>"), "arrow"),
    (re.compile(r'"rl\.tc\.h"'), "rl"),
    (re.compile(r'"robot\.tc\.h"'), "robot"),
    (re.compile(r'"rollout\.tc\.h"'), "rollout"),
)
TAG = re.compile(r"^<!--\s*doc:\s*(\w+)\s*(.*?)\s*-->$")


class Block:
    def __init__(self, page, line, lang, lines, kind, args):
        self.page, self.line, self.lang, self.lines = page, line, lang, lines
        self.kind, self.args = kind, args  # kind: run, compile, excerpt, skip
        # Options: needs=A,B  given=<parameter list>  prelude=<statements>;
        # each runs to the next option.
        options = dict(re.findall(r"(needs|given|prelude)=(.*?)(?=\s+(?:needs|given|prelude)=|$)", args))
        self.given = options.get("given", "").strip()
        self.prelude = options.get("prelude", "").strip()
        self.needs = set(filter(None, options.get("needs", "").split(",")))
        for pattern, need in INCLUDE_NEEDS:
            if any(pattern.search(l) for l in lines if l.lstrip().startswith("#include")):
                self.needs.add(need)
        self.complete = lang == "cpp" and any(re.match(r"\s*int main\(", l) for l in lines)

    @property
    def where(self):
        return f"{self.page}:{self.line}"

    @property
    def ident(self):
        return re.sub(r"\W", "_", f"{self.page}_{self.line}")

    @property
    def group(self):
        # One file per optional library, the block's rarest: a file links
        # every library its blocks need (doc_blocks links them all).
        for lib in ("aoti", "arrow", "distributed", "nn"):
            if lib in self.needs:
                return lib
        return "runtime"


def pages(root):
    yield "README.md"
    for p in sorted((root / "docs").glob("*.md")):
        yield p.relative_to(root).as_posix()


def blocks(root):
    for page in pages(root):
        text = (root / page).read_text().split("\n")
        i = 0
        while i < len(text):
            m = re.match(r"^```(\w*)\s*$", text[i])
            if not m:
                i += 1
                continue
            lang, start = m.group(1), i + 1
            j = i + 1
            while j < len(text) and not text[j].startswith("```"):
                j += 1
            tag = None
            k = i - 1
            while k >= 0 and not text[k].strip():
                k -= 1
            if k >= 0:
                tag = TAG.match(text[k].strip())
            if lang in ("cpp", "python"):
                kind, args = (tag.group(1), tag.group(2)) if tag else ("compile", "")
                if kind not in ("run", "compile", "excerpt", "skip"):
                    raise SystemExit(f"{page}:{k + 1}: unknown doc tag '{kind}' (run, compile, excerpt, skip)")
                yield Block(page, start + 1, lang, text[start:j], kind, args)
            elif tag:
                raise SystemExit(f"{page}:{k + 1}: a doc tag before a ```{lang} block, which is not checked")
            i = j + 1


def cpp_source(group, members):
    out = ["// Generated by tests/docs/doc_blocks.py from the documentation's C++ blocks.",
           "#include <ATen/ATen.h>", "#include <tensordict/tensordict.h>",
           "#include <functional>", "#include <iostream>", "#include <string>", "#include <utility>", "#include <vector>",
           "#include <unistd.h>"]
    needs = set().union(*(b.needs for b in members))
    headers = {"nn": "<tensordict/nn.h>", "distributed": "<tensordict/distributed.h>",
               "aoti": "<tensordict/nn/aoti.h>", "arrow": "<tensordict/arrow.h>"}
    out += [f"#include {headers[n]}" for n in ("nn", "distributed", "aoti", "arrow") if n in needs]
    out += [f'#include "{schema}.tc.h"' for schema in sorted(needs & set(SCHEMAS))]
    for b in members:
        for n, l in enumerate(b.lines):
            if l.lstrip().startswith("#include"):
                out += [f'#line {b.line + n} "{b.page}"', l]
    out += ['#line 1 "doc_blocks.generated"', "using tensordict::TensorDict;", "using namespace at::indexing;", ""]
    runs = []
    for b in members:
        body = ["" if l.lstrip().startswith("#include") else l for l in b.lines]
        if b.complete:
            out += [f"namespace {b.ident} {{", f'#line {b.line} "{b.page}"'] + body
            out += ['#line 1 "doc_blocks.generated"', "}  // namespace", ""]
            if b.kind == "run":
                runs.append((b, f"[] {{ return {b.ident}::main(); }}"))
        else:
            out += [f"[[maybe_unused]] static void {b.ident}({b.given}) {{", b.prelude, f'#line {b.line} "{b.page}"'] + body
            out += ['#line 1 "doc_blocks.generated"', "}", ""]
            if b.kind == "run":
                runs.append((b, f"[] {{ {b.ident}(); return 0; }}"))
    out.append(f"void doc_blocks_{group}(std::vector<std::pair<std::string, std::function<int()>>>& runs) {{")
    for b, call in runs:
        out.append(f'  runs.emplace_back("{b.where}", {call});')
    out += ["  (void)runs;", "}", ""]
    return "\n".join(out)


MAIN = r'''// Generated by tests/docs/doc_blocks.py: runs the documentation's C++ blocks
// tagged run, each in a fresh directory, and names the page and line of one
// that throws or returns non-zero.
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>
#include <unistd.h>

using Runs = std::vector<std::pair<std::string, std::function<int()>>>;
@DECLS@
int main() {
  Runs runs;
@CALLS@
  const auto base = std::filesystem::current_path();
  int failed = 0, n = 0;
  for (auto& [where, run] : runs) {
    auto dir = base / ("block-" + std::to_string(n++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::current_path(dir);
    try {
      const int rc = run();
      if (rc != 0) {
        std::cerr << where << ": the block returned " << rc << "\n";
        ++failed;
      } else {
        std::cout << where << ": ran\n";
      }
    } catch (const std::exception& e) {
      std::cerr << where << ": the block threw: " << e.what() << "\n";
      ++failed;
    }
    std::filesystem::current_path(base);
  }
  std::cout << runs.size() - failed << " of " << runs.size() << " C++ blocks ran\n";
  return failed == 0 ? 0 : 1;
}
'''


def generate(root, out_dir, have):
    have = set(filter(None, have.split(","))) | {"runtime"}
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = {}
    for b in blocks(root):
        if b.lang != "cpp" or b.kind not in ("run", "compile"):
            continue
        if b.complete and not any(re.search(r"\breturn\b", l) for l in b.lines):
            raise SystemExit(f"{b.where}: a complete program ends main with a return (it runs as a function here)")
        if b.kind == "run" and b.given:
            raise SystemExit(f"{b.where}: a block tagged run takes no given= variables")
        unknown = b.needs - set(GROUPS) - set(SCHEMAS)
        if unknown:
            raise SystemExit(f"{b.where}: unknown needs {sorted(unknown)}")
        if b.needs <= have:
            groups.setdefault(b.group, []).append(b)
    written = []
    for group in GROUPS:
        members = groups.get(group, [])
        path = out_dir / f"doc_blocks_{group}.cpp"
        text = cpp_source(group, members) if members else f"// No documentation block of group {group} in this build.\n"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        if members:
            written.append(group)
    main = MAIN.replace("@DECLS@", "\n".join(f"void doc_blocks_{g}(Runs&);" for g in written))
    main = main.replace("@CALLS@", "\n".join(f"  doc_blocks_{g}(runs);" for g in written))
    path = out_dir / "doc_blocks_main.cpp"
    if not path.exists() or path.read_text() != main:
        path.write_text(main)


def excerpt_ok(root, b):
    target = root / b.args.split()[0]
    if not target.is_file():
        return f"{b.where}: the excerpt names {b.args.split()[0]}, which is no file of the repository"
    lines = [l.strip() for l in target.read_text().split("\n")]
    at = 0
    for n, l in enumerate(b.lines):
        s = l.strip()
        if not s or s in ("...", "// ...", "# ..."):
            continue
        try:
            at = lines.index(s, at) + 1
        except ValueError:
            return f"{b.page}:{b.line + n}: this line of the excerpt is not in {b.args.split()[0]} (after the lines before it): {s}"
    return None


def reference_ok(root):
    page = (root / "docs/reference.md").read_text()
    base = root / "runtime/include/tensordict"
    missing = [h.relative_to(base).as_posix() for h in sorted(base.rglob("*.h"))
               if not h.relative_to(base).as_posix().startswith("detail/")
               and f"`<tensordict/{h.relative_to(base).as_posix()}>`" not in page]
    return [f"docs/reference.md: the public header <tensordict/{h}> is not listed" for h in missing]


def check(root, python):
    errors, ran, compiled = [], 0, 0
    for b in blocks(root):
        if b.kind == "excerpt":
            e = excerpt_ok(root, b)
            if e:
                errors.append(e)
            continue
        if b.lang != "python" or b.kind == "skip":
            continue
        source = "\n".join(b.lines) + "\n"
        try:
            compile(source, b.where, "exec")
            compiled += 1
        except SyntaxError as e:
            errors.append(f"{b.page}:{b.line + (e.lineno or 1) - 1}: the Python block does not compile: {e.msg}")
            continue
        if b.kind == "run":
            if not python:
                print(f"{b.where}: not run (no --python with tensordict)")
                continue
            with tempfile.TemporaryDirectory() as tmp:
                script = pathlib.Path(tmp) / (re.sub(r"\W", "_", b.where) + ".py")
                script.write_text(source)
                env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root / "python"), os.environ.get("PYTHONPATH")])))
                r = subprocess.run([python, str(script)], cwd=tmp, capture_output=True, text=True, env=env, timeout=300)
                if r.returncode != 0:
                    errors.append(f"{b.where}: the Python block failed (exit {r.returncode}):\n{r.stdout}{r.stderr}")
                else:
                    ran += 1
    errors += reference_ok(root)
    for e in errors:
        print(e, file=sys.stderr)
    print(f"Python blocks: {compiled} compiled, {ran} run; excerpts and the reference page checked")
    return 1 if errors else 0


def count(root):
    stats = {}
    for b in blocks(root):
        key = (b.lang, b.kind if not (b.kind == "compile" and b.complete) else "compile (program)")
        stats[key] = stats.get(key, 0) + 1
        if b.kind == "skip":
            print(f"skip {b.where}: {b.args}")
    for (lang, kind), n in sorted(stats.items()):
        print(f"{lang:7} {kind:18} {n}")


def main(argv):
    if len(argv) >= 2 and argv[0] == "generate" and len(argv) == 4:
        generate(pathlib.Path(argv[1]), pathlib.Path(argv[2]), argv[3])
        return 0
    if len(argv) >= 2 and argv[0] == "check":
        python = os.path.abspath(argv[argv.index("--python") + 1]) if "--python" in argv else None
        return check(pathlib.Path(argv[1]), python)
    if len(argv) == 2 and argv[0] == "count":
        count(pathlib.Path(argv[1]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
