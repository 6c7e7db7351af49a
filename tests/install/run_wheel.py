"""The wheel as a user gets it.

    python3 tests/install/run_wheel.py [--uv UV] [--work DIR] dist/tensorclass-*.whl

In a new venv that holds only the pinned torch (tests/requirements.txt), the
wheel and what the wheel depends on, with no build tree, no ./.venv and no
PYTHONPATH anywhere (every source it builds is copied into DIR first):

0. what the wheel bundles (tensorclass.libs/) comes with the copyright
   file of its Debian package;
1. the README's Install section, as the installed README shows it: its
   shell lines run as they are (`pip install tensorclass`, the CMake line,
   the build) on its example project, whose files are the section's blocks
   headed `app/<file>`; so the section shows what this test runs;
2. tests/install/consumer builds against the installed package
   (find_package(tensorclass) finds the runtime and the generator;
   tensorclass_generate() with PYTHON_OUT) and runs;
3. the tensorclass-gen command generates C++ and Python from a YAML schema
   and from an annotated header, and the generated Python module imports;
   `tensorclass-gen --version`, `tensorclass.__version__` and the CMake
   package's version are VERSION;
4. the deploy example: train_policy.py exports a policy with
   tensorclass.export, run_policy (C++, tensorclass::aoti) runs it.

`pip` in the README's lines is `uv pip` on the new venv (the same command
line; uv's cache makes a new venv with torch take seconds, not minutes),
with the wheel's directory as a find-links source. Prints each phase's
seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STARTED = time.monotonic()


def phase(what: str) -> None:
    print(f"== wheel test: {what} done at {time.monotonic() - STARTED:.0f} s", flush=True)


def run(cmd, *, env, cwd, capture=False, shell=False) -> str:
    shown = cmd if isinstance(cmd, str) else " ".join(str(c) for c in cmd)
    print(f"$ {shown}", flush=True)
    result = subprocess.run(cmd, env=env, cwd=cwd, shell=shell, text=True,
                            stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.STDOUT if capture else None)
    if result.returncode != 0:
        if capture:
            print(result.stdout)
        sys.exit(f"failed ({result.returncode}): {shown}")
    if capture:
        print(result.stdout, end="")
        return result.stdout
    return ""


def require(condition: bool, what: str) -> None:
    if not condition:
        sys.exit(f"wheel test: {what}")


def pin(name: str) -> str:
    for line in (REPO / "tests" / "requirements.txt").read_text().splitlines():
        if line.startswith(f"{name}=="):
            return line.strip()
    sys.exit(f"no {name} pin in tests/requirements.txt")


def install_section(readme: str) -> tuple[list[str], dict[str, str]]:
    """The README's Install section: its shell lines and its example's files."""
    match = re.search(r"^## Install\n(.*?)(?=^## )", readme, re.S | re.M)
    require(match is not None, "the installed README.md has no '## Install' section")
    section = match.group(1)
    shell = re.findall(r"```sh\n(.*?)```", section, re.S)
    require(len(shell) == 1, f"the Install section should have one sh block, has {len(shell)}")
    lines = [line for line in shell[0].splitlines() if line.strip() and not line.lstrip().startswith("#")]
    # (a block's doc-check tag, an HTML comment, may sit between its name and its fence)
    files = dict(re.findall(r"`(app/[\w./-]+)`:?\n+(?:<!--[^\n]*-->\n)?```\w*\n(.*?)```", section, re.S))
    return lines, files


def bundled_licenses(wheel: zipfile.ZipFile) -> None:
    """What auditwheel bundled: each Debian package its SBOM names comes
    with its copyright file."""
    names = wheel.namelist()
    libs = [n.split("/")[-1] for n in names if n.startswith("tensorclass.libs/")]
    print(f"bundled libraries: {', '.join(libs) or 'none'}")
    sbom = next((n for n in names if n.endswith(".dist-info/sboms/auditwheel.cdx.json")), None)
    packages = [] if sbom is None else [
        c["name"] for c in json.loads(wheel.read(sbom))["components"] if c.get("purl", "").startswith("pkg:deb/")]
    require(len(packages) >= (1 if libs else 0), f"bundled {libs}, but the SBOM names no Debian package")
    for package in packages:
        require(any(n.endswith(f".dist-info/licenses/{package}/copyright") for n in names),
                f"the wheel bundles {package} without its copyright file")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--uv", default=shutil.which("uv") or "uv")
    parser.add_argument("--work", type=Path, default=Path("build-wheel/test"))
    args = parser.parse_args()
    wheel = args.wheel.resolve()
    work = args.work.resolve()
    uv = str(Path(args.uv).resolve()) if os.sep in args.uv else args.uv
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    version = (REPO / "VERSION").read_text().split()[0]

    # Nothing of this checkout or its venvs: a clean environment, a new venv.
    venv = work / "venv"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CMAKE_PREFIX_PATH", "Torch_DIR", "PIP_FIND_LINKS",
                        "LD_LIBRARY_PATH", "TENSORCLASS_GEN_EXECUTABLE")}
    run([uv, "venv", "-q", "--seed", "--python", sys.executable, venv], env=env, cwd=work)
    shim = work / "shim"
    shim.mkdir()
    (shim / "pip").write_text(
        f"#!/bin/sh\n# pip, as uv's pip on the test's venv, the wheel's directory a find-links source\n"
        f"# (read anew: a rebuilt wheel keeps its name)\n"
        f"exec '{uv}' pip \"$@\" --python '{venv}/bin/python' --find-links '{wheel.parent}' "
        f"--refresh-package tensorclass\n")
    (shim / "pip").chmod(0o755)
    # The test's C++ builds go through ccache where it is installed, its
    # paths taken relative to the work dir (which names the checkout): a rerun
    # compiles nothing anew. The projects themselves name no launcher.
    if shutil.which("ccache") and env.get("CCACHE_DISABLE", "0") in ("", "0"):
        env.setdefault("CCACHE_MAXSIZE", "12G")  # as the project's builds (cmake/TensorclassCompilerCache.cmake)
        env.update(CMAKE_CXX_COMPILER_LAUNCHER="ccache", CCACHE_BASEDIR=str(work), CCACHE_NOHASHDIR="1",
                   CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime")
    env["VIRTUAL_ENV"] = str(venv)
    outside = [d for d in env.get("PATH", "").split(":") if d and not Path(d).resolve().is_relative_to(REPO)]
    env["PATH"] = ":".join([str(shim), f"{venv}/bin", *outside])
    # The pinned torch first, as tests/requirements.txt pins it; the
    # README's pip line then adds the wheel.
    run(["pip", "install", pin("torch")], env=env, cwd=work)
    phase("new venv with the pinned torch")

    python = str(venv / "bin" / "python")

    # 1. The README's Install section, run as it is shown.
    app = work / "readme"
    app.mkdir()
    # The wheel is installed by the section's own pip line: its README is
    # read from the wheel first (and compared with the installed one below).
    with zipfile.ZipFile(wheel) as zf:
        readme_name = next(n for n in zf.namelist() if n.endswith("share/doc/tensorclass/README.md"))
        readme = zf.read(readme_name).decode()
        bundled_licenses(zf)
    lines, files = install_section(readme)
    require(any(line.startswith("pip install ") and "tensorclass" in line for line in lines),
            f"the Install section's shell lines do not pip install tensorclass: {lines}")
    cmake_line = ("cmake -S app -B build -DCMAKE_PREFIX_PATH=\"$(python -c 'import torch, tensorclass; "
                  "print(torch.utils.cmake_prefix_path + \";\" + tensorclass.cmake_prefix_path)')\"")
    require(cmake_line in lines, f"the Install section does not show the CMake line\n{cmake_line}\nbut {lines}")
    require("app/CMakeLists.txt" in files, f"the Install section's example has no app/CMakeLists.txt: {list(files)}")
    for name, text in files.items():
        (app / name).parent.mkdir(parents=True, exist_ok=True)
        (app / name).write_text(text)
    run(["bash", "-euo", "pipefail", "-c", "\n".join(lines)], env=env, cwd=app)
    phase("the README's Install section")

    # Installed: the package, its version, its CMake prefix.
    out = run([python, "-c", "import tensorclass, torch; print(tensorclass.__version__); "
               "print(tensorclass.cmake_prefix_path); print(torch.__version__)"], env=env, cwd=work, capture=True)
    got_version, prefix, torch_version = out.split()
    # Nothing of the checkout on the venv's path: its python/, ./.venv, a build tree.
    out = run([python, "-c", "import sys, torch, tensordict, tensorclass; "
               "print('\\n'.join([*sys.path, torch.__file__, tensordict.__file__, tensorclass.__file__]))"],
              env=env, cwd=work, capture=True)
    for entry in filter(None, out.splitlines()):
        where = Path(entry).resolve()
        require(not where.is_relative_to(REPO) or where.is_relative_to(venv.resolve()),
                f"the new venv reaches into the checkout: {entry}")
    require(got_version == version, f"tensorclass.__version__ is {got_version}, VERSION says {version}")
    package_version = Path(prefix, "lib", "cmake", "tensorclass", "tensorclassConfigVersion.cmake")
    require(package_version.exists(), f"no CMake package under tensorclass.cmake_prefix_path ({prefix})")
    require(f'set(PACKAGE_VERSION "{version}")' in package_version.read_text(),
            f"the CMake package's version is not VERSION's {version}")
    require(torch_version.startswith(pin("torch").split("==")[1].rsplit(".", 1)[0] + "."),
            f"the venv's torch is {torch_version}, not the pinned one")
    readme_path = Path(prefix, "share", "doc", "tensorclass", "README.md")
    require(readme_path.read_text() == readme, "the installed README.md is not the wheel's")
    out = run(["tensorclass-gen", "--version"], env=env, cwd=work, capture=True)
    require(out.strip() == f"tensorclass-gen {version}", f"tensorclass-gen --version printed {out!r}")
    cmake_prefix = run([python, "-c", "import torch, tensorclass; "
                        "print(torch.utils.cmake_prefix_path + ';' + tensorclass.cmake_prefix_path)"],
                       env=env, cwd=work, capture=True).strip()

    # 2. The installed-consumer project, with the package's own generator.
    consumer = work / "consumer"
    shutil.copytree(REPO / "tests" / "install" / "consumer", consumer)
    run(["cmake", "-S", consumer, "-B", consumer / "build", "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={cmake_prefix}"],
        env=env, cwd=work)
    run(["cmake", "--build", consumer / "build"], env=env, cwd=work)
    require((consumer / "build" / "python" / "consumer" / "__init__.py").exists(),
            "the consumer's build wrote no Python module (PYTHON_OUT)")
    out = run([consumer / "build" / "consumer"], env=env, cwd=work, capture=True)
    require("TensorDict(batch_size=[2], fields={obs: f32[3], reward: f32[]})" in out and "Step(" in out,
            "the consumer printed something unexpected")
    out = run([consumer / "build" / "policy"], env=env, cwd=work, capture=True)
    require("policy: Step(" in out, "the consumer's policy printed something unexpected")
    phase("tests/install/consumer against the wheel")

    # 3. tensorclass-gen, both languages, both front ends.
    gen = work / "gen"
    gen.mkdir()
    shutil.copy(REPO / "tests" / "install" / "consumer" / "step.yaml", gen)
    shutil.copy(REPO / "tests" / "generator" / "schemas" / "stack_header.h", gen)
    for schema in ("step.yaml", "stack_header.h"):
        run(["tensorclass-gen", schema, "-o", "cpp"], env=env, cwd=gen)
        run(["tensorclass-gen", "--lang", "python", schema, "-o", "py"], env=env, cwd=gen)
    require((gen / "cpp" / "step.tc.h").exists() and (gen / "cpp" / "stack_header.tc.h").exists(),
            "tensorclass-gen wrote no C++ header")
    py_env = dict(env, PYTHONPATH=str(gen / "py"))
    out = run([python, "-c", "import torch, consumer; "
               "print(consumer.Step(obs=torch.zeros(2, 3), reward=torch.ones(2), batch_size=[2]))"],
              env=py_env, cwd=gen, capture=True)
    require("Step(" in out, "the generated Python module did not make a Step")
    phase("tensorclass-gen (C++ and Python, YAML and header)")

    # 4. The deploy example: export in Python, run in C++.
    deploy = work / "deploy"
    shutil.copytree(REPO / "tests" / "install" / "deploy", deploy)
    for name in ("run_policy.cpp", "robot.yaml", "train_policy.py"):
        shutil.copy(REPO / "examples" / "deploy" / name, deploy)
    run(["cmake", "-S", deploy, "-B", deploy / "build", "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={cmake_prefix}"],
        env=env, cwd=work)
    run(["cmake", "--build", deploy / "build"], env=env, cwd=work)
    py_env = dict(env, PYTHONPATH=str(deploy / "build" / "python"))
    run([python, deploy / "train_policy.py", deploy / "policy.pt2"], env=py_env, cwd=deploy)
    out = run([deploy / "build" / "run_policy", deploy / "policy.pt2"], env=env, cwd=deploy, capture=True)
    require("mean distance to the target controller" in out, "run_policy printed something unexpected")
    phase("the deploy example (tensorclass.export, then C++)")
    print("wheel test: 4 passed, 0 failed")


if __name__ == "__main__":
    main()
