"""Exports a tensordict module for C++: one call, one ``.pt2`` package.

``export(module, example, path)`` follows tensordict's export route: the
module is called with its inputs as keyword arguments (a nested key's parts
joined with ``_``, tensordict's ``dispatch`` rule) and returns its out_keys as
a tuple; ``torch.export.export`` traces that call and
``torch._inductor.aoti_compile_and_package`` compiles it. The package's
metadata, under the key ``"tensorclass"``, records what C++ needs to call it
by key (a JSON object)::

    {"format": 1,
     "in_keys":  [{"key": ["agent", "obs"], "arg": "agent_obs", "dtype": "float32", "event_shape": [4]}],
     "out_keys": [{"key": ["action"], "dtype": "float32", "event_shape": [2]}],
     "batch_size": [5], "dynamic_batch": true,
     "schema": "<class 'robot.PolicyStep'>",
     "interaction_type": "deterministic",
     "weights": {"swappable": true, "folding": "none",
                 "params": [{"key": ["module", "0", "weight"], "fqn": "module.0.weight",
                             "dtype": "float32", "shape": [16, 4]}]}}

``weights`` is what ``tensordict::nn::to_module`` needs to load new weights
into the running package: every parameter and buffer of the module, keyed as
``TensorDict.from_module(module)`` keys it, with the name the package gives
its constant. ``swappable`` says that the package was compiled so that no
weight was folded into the code (``_SWAPPABLE``): each is a constant that
can be replaced. ``folding`` is ``"runtime"`` when the package also folds
constants of its own at run time (then redone after each update), else
``"none"``.

``tensordict::nn::AOTIModule`` (C++, the optional ``tensorclass::aoti``
library) reads it, gathers the inputs by key and writes the outputs at the
out_keys.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import torch
from tensordict import TensorDict, TensorDictBase, is_tensorclass
from tensordict.nn import InteractionType, set_interaction_type
from tensordict.utils import unravel_key

__all__ = ["export", "FORMAT", "METADATA_KEY"]

# The metadata layout's version: AOTIModule refuses a package with a newer one.
FORMAT = 1
# The package metadata entry holding the JSON object above.
METADATA_KEY = "tensorclass"
# tensordict's dispatch joins a nested key's parts with this separator.
_SEPARATOR = "_"
# Keeps every parameter and buffer a constant of the package: no folding of
# constants at compile time (inductor would fold a Linear's weight into a
# transposed copy) and small constants kept as constants (not inlined into
# the code). An update is then a copy of the new values and nothing more.
_SWAPPABLE = {
    "joint_graph_constant_folding": False,
    "always_keep_tensor_constants": True,
    "aot_inductor.use_runtime_constant_folding": False,
}
# The fallback when the package has constants of its own besides the
# weights (a tensor made in forward, or one inductor derived from weights
# anyway): fold them at run time, when the package loads and again after each
# weight swap, so that nothing derived from the weights goes stale. Updates
# then also run the folding.
_RUNTIME_FOLDING = {"aot_inductor.use_runtime_constant_folding": True}


def _key_list(key) -> List[str]:
    key = unravel_key(key)
    return [key] if isinstance(key, str) else list(key)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def export(
    module: torch.nn.Module,
    example: Any,
    path: str,
    *,
    dynamic_batch: bool = True,
    interaction_type: "InteractionType | str" = InteractionType.DETERMINISTIC,
    swappable_weights: bool = True,
    inductor_configs: Optional[Dict[str, Any]] = None,
) -> str:
    """Exports ``module`` called on ``example`` to the AOTInductor package ``path``.

    Args:
        module: a ``TensorDictModuleBase`` (``TensorDictModule``,
            ``TensorDictSequential``, a probabilistic module...): its
            ``in_keys`` are read from ``example``, its ``out_keys`` are the
            package's outputs, in order.
        example: a ``TensorDict`` or a ``@tensorclass`` instance holding the
            in_keys. Its batch size is the package's; with a tensorclass, its
            class is recorded as the package's schema (C++ then checks that a
            generated struct it runs on is of the same schema).
        path: the package file to write (``.pt2``).
        dynamic_batch: every batch dim of the package may take any size (each
            must be at least 2 in ``example``: torch.export specialises a dim
            of size 0 or 1). ``False``: the package takes ``example``'s batch
            size only.
        interaction_type: how the probabilistic modules act, as under
            ``set_interaction_type``: ``DETERMINISTIC`` (the default: the
            distribution's deterministic sample, the mean of a Normal) or
            ``RANDOM`` (a sample each call, for an exploring actor), or any
            other ``InteractionType``, by value or name. It is baked into the
            package: the C++ side's ``InteractionTypeGuard`` does not change
            it. Recorded in the metadata.
        swappable_weights: compile so that every parameter and buffer
            stays a constant that ``tensordict::nn::to_module`` can replace
            (checked after compiling): no constant folding at compile time
            and small constants kept (the inductor options in
            ``_SWAPPABLE``). A package with constants of its own besides the
            weights is compiled again with runtime constant folding, so that
            nothing derived from the weights goes stale.
            ``False`` lets inductor fold weights into the code
            (``to_module`` then refuses the package).
        inductor_configs: more options for ``aoti_compile_and_package``.

    Returns:
        ``path``.
    """
    if not isinstance(example, TensorDictBase) and not is_tensorclass(example):
        raise TypeError(f"export: example must be a TensorDict or a tensorclass instance, got {type(example).__name__}")
    in_keys = [_key_list(k) for k in module.in_keys]
    out_keys = [_key_list(k) for k in module.out_keys]
    batch_size = list(example.batch_size)
    names: Dict[str, List[str]] = {}
    kwargs: Dict[str, torch.Tensor] = {}
    inputs = []
    for key in in_keys:
        arg = _SEPARATOR.join(key)
        if arg in names:
            raise ValueError(
                f"export: in_keys {names[arg]} and {key} both become the keyword argument {arg!r}"
            )
        names[arg] = key
        value = example.get(tuple(key))
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"export: example's entry {key} is not a tensor ({type(value).__name__})")
        kwargs[arg] = value
        inputs.append(
            {"key": key, "arg": arg, "dtype": _dtype_name(value.dtype),
             "event_shape": list(value.shape[len(batch_size):])}
        )
    if dynamic_batch and any(size < 2 for size in batch_size):
        raise ValueError(
            f"export: dynamic_batch needs every batch dim of the example to be at least 2, got {batch_size}"
        )

    interaction_type = InteractionType(interaction_type.lower()) if isinstance(interaction_type, str) else interaction_type
    if not isinstance(interaction_type, InteractionType):
        raise TypeError(f"export: interaction_type must be an InteractionType or its name, got {interaction_type!r}")

    module = module.eval()
    with torch.no_grad(), set_interaction_type(interaction_type):
        outputs = module(**kwargs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    if len(outputs) != len(out_keys):
        raise ValueError(f"export: the module returned {len(outputs)} tensors for {len(out_keys)} out_keys")
    returned = [
        {"key": key, "dtype": _dtype_name(value.dtype), "event_shape": list(value.shape[len(batch_size):])}
        for key, value in zip(out_keys, outputs)
    ]

    dynamic_shapes = None
    if dynamic_batch and batch_size:
        dims = [torch.export.Dim(f"batch_{i}") for i in range(len(batch_size))]
        dynamic_shapes = {"kwargs": {arg: dict(enumerate(dims)) for arg in kwargs}}
    with torch.no_grad(), set_interaction_type(interaction_type):
        program = torch.export.export(module, args=(), kwargs=kwargs, dynamic_shapes=dynamic_shapes, strict=False)

    params = TensorDict.from_module(module)
    weights = [
        {"key": _key_list(key), "fqn": ".".join(_key_list(key)), "dtype": _dtype_name(value.dtype), "shape": list(value.shape)}
        for key, value in params.items(include_nested=True, leaves_only=True)
    ]

    metadata = {
        "format": FORMAT,
        "in_keys": inputs,
        "out_keys": returned,
        "batch_size": batch_size,
        "dynamic_batch": bool(dynamic_batch and batch_size),
        "schema": str(type(example)) if is_tensorclass(example) else None,
        "interaction_type": interaction_type.value,
        "weights": {"swappable": bool(swappable_weights), "folding": "none", "params": weights},
    }
    configs = dict(_SWAPPABLE if swappable_weights else {})
    configs.update(inductor_configs or {})
    if configs.get("aot_inductor.use_runtime_constant_folding"):
        metadata["weights"]["folding"] = "runtime"
    path = _compile(program, path, configs, metadata)
    if swappable_weights:
        others = _check_swappable(path, weights)
        if others and metadata["weights"]["folding"] == "none":
            metadata["weights"]["folding"] = "runtime"
            path = _compile(program, path, {**configs, **_RUNTIME_FOLDING}, metadata)
            _check_swappable(path, weights)
    return path


def _compile(program, path: str, configs: Dict[str, Any], metadata: Dict[str, Any]) -> str:
    configs = {**configs, "aot_inductor.metadata": {**configs.get("aot_inductor.metadata", {}),
                                                    METADATA_KEY: json.dumps(metadata)}}
    return torch._inductor.aoti_compile_and_package(program, package_path=path, inductor_configs=configs)


def _check_swappable(path: str, weights: List[Dict[str, Any]]) -> List[str]:
    """Every parameter and buffer must have stayed a constant of the package;
    returns the package's other constants."""
    constants = set(torch._inductor.aoti_load_package(path).get_constant_fqns())
    lost = [w["fqn"] for w in weights if w["fqn"] not in constants]
    if lost:
        raise RuntimeError(
            f"export: the package {path} lost {lost} as constants (folded into its code, or unused), "
            "so they cannot be updated; leave the inductor options in _SWAPPABLE as they are with "
            "swappable_weights=True"
        )
    return sorted(constants - {w["fqn"] for w in weights})
