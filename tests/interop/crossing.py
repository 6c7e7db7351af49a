"""What the scripts that cross files with Python tensordict share: their
command line (--tool, --work), a fresh work directory, and the checks they
count and report.

    crossing = Crossing("archive")          # parses --tool and --work
    crossing.check("what is true", ok, "detail when it is not")
    crossing.tool("copy", src, dst)         # the C++ tool; False (and a failure) when it fails
    crossing.finish("summary line")         # exits 1 when a check failed
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path


class Crossing:
    def __init__(self, name):
        parser = argparse.ArgumentParser()
        parser.add_argument("--tool", required=True)
        parser.add_argument("--work", required=True)
        args = parser.parse_args()
        self.name = name
        self.tool_path = args.tool
        self.work = Path(args.work)
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        self.failures = []
        self.passed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failures.append(name)
            print(f"FAIL {name} {detail}")
        return ok

    def run(self, *argv):
        """The C++ tool's completed process (not checked)."""
        return subprocess.run([self.tool_path, *map(str, argv)], capture_output=True, text=True)

    def tool(self, *argv):
        """Runs the C++ tool; a failure (with its stderr) when it exits non-zero."""
        done = self.run(*argv)
        if done.returncode != 0:
            self.failures.append(f"{self.name}_tool {argv[0]}")
            print(f"FAIL {self.name}_tool {' '.join(map(str, argv))}: {done.stderr}")
            return False
        return True

    def finish(self, summary):
        if self.failures:
            print(f"{self.passed} passed, {len(self.failures)} failed")
            sys.exit(1)
        print(summary)
