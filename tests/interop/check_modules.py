#!/usr/bin/env python3
"""The Python modules tensorclass-gen wrote compile (py_compile) and pass mypy --strict.

``python check_modules.py <dir>``: every ``.py`` under ``<dir>`` (the generated
packages; ``<dir>`` is what goes on ``sys.path``). mypy's cache sits beside
the interpreter's environment, so that the builds sharing it share the cache.
"""

import py_compile
import subprocess
import sys
from pathlib import Path


def main() -> int:
    root = Path(sys.argv[1])
    modules = sorted(root.rglob("*.py"))
    if not modules:
        print(f"no generated modules under {root}")
        return 1
    for module in modules:
        py_compile.compile(str(module), doraise=True)
        print(f"compiled  {module.relative_to(root)}")
    cache = Path(sys.prefix) / "mypy-cache"
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--explicit-package-bases", "--cache-dir", str(cache),
         *(str(m.relative_to(root)) for m in modules)],
        cwd=root,
        capture_output=True,
        text=True,
    )
    print(done.stdout.strip())
    print(done.stderr.strip())
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
