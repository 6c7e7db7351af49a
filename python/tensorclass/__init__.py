"""Python helpers of tensorclass, the C++ home of tensordict.

``tensorclass.export`` writes a tensordict module as an AOTInductor package
that ``tensordict::nn::AOTIModule`` runs in C++.

Installed from the wheel (``pip install tensorclass``), the package also
holds the C++ half: ``tensorclass.cmake_prefix_path`` points CMake at its
package (``find_package(tensorclass)``), as ``torch.utils.cmake_prefix_path``
points it at libtorch, and the ``tensorclass-gen`` command runs the bundled
generator.
"""

import os as _os

#: The directory to add to CMAKE_PREFIX_PATH for find_package(tensorclass):
#: the package's lib/cmake/tensorclass, include/, lib/ and bin/ are under it.
#: (In a source tree, python/tensorclass, it holds no CMake package.)
cmake_prefix_path = _os.path.dirname(_os.path.abspath(__file__))


def _source_tree_version() -> str:
    # python/tensorclass in a checkout: the repository's VERSION file.
    path = _os.path.join(cmake_prefix_path, _os.pardir, _os.pardir, "VERSION")
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().strip()
    except OSError:
        return "unknown"


try:
    from tensorclass._version import __version__  # written into the wheel from VERSION
except ImportError:
    __version__ = _source_tree_version()

__all__ = ["cmake_prefix_path", "__version__"]
