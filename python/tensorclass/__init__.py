"""Python helpers of tensorclass, the C++ home of tensordict.

``tensorclass.export`` writes a tensordict module as an AOTInductor package
that ``tensordict::nn::AOTIModule`` runs in C++.
"""
