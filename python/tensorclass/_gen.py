"""The ``tensorclass-gen`` command of the wheel: runs the bundled generator,
``bin/tensorclass-gen`` under the package (the one the CMake package's
``tensorclass_generate()`` runs too), with the same arguments."""

import os
import sys


def executable() -> str:
    """The path of the bundled tensorclass-gen."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "tensorclass-gen")


def main() -> None:
    path = executable()
    if not os.path.exists(path):
        sys.exit(f"tensorclass-gen: no generator at {path} (this tensorclass package is not an installed wheel)")
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    main()
