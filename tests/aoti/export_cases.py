"""Exports the deploy suite's packages once per test run (CTest fixture).

For each case: <out>/<case>.pt2 (tensorclass.export), <case>_inputs (a memmap
tree of inputs at a batch size other than the export's, for the dynamic
cases) and <case>_expected (the module's outputs on those inputs, computed by
Python tensordict). For the live-weights cases also <case>_params
(TensorDict.from_module of the exported module), <case>_new_params (other
weights, as a learner sends them) and <case>_expected_new (the outputs with
those, Python eager). Also packages edited into the broken forms the error
tests need (another device, a newer format, no metadata, weights not
swappable).
"""

import argparse
import json
import os
import shutil
import sys
import zipfile

import torch
from tensordict import TensorDict
from tensordict.nn import (
    NormalParamExtractor,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictSequential,
)
from torch import nn

from tensorclass.export import _check_swappable, export


def expect_error(call, kind, message):
    try:
        call()
    except kind as e:
        if str(e) != message:
            raise AssertionError(f"{kind.__name__}: {e} instead of {message}")
        return
    raise AssertionError(f"no {kind.__name__}: {message}")


def mlp(n_in, n_out):
    return nn.Sequential(nn.Linear(n_in, 16), nn.Tanh(), nn.Linear(16, n_out))


def save(td, path):
    shutil.rmtree(path, ignore_errors=True)
    td.memmap(path)


def case(out, name, module, example, inputs, **kwargs):
    export(module, example, os.path.join(out, f"{name}.pt2"), **kwargs)
    save(inputs, os.path.join(out, f"{name}_inputs"))
    with torch.no_grad():
        result = module(inputs.clone())
    save(result.select(*module.out_keys), os.path.join(out, f"{name}_expected"))


class Scaled(nn.Module):
    """A Linear layer scaled by a constant made in forward (not a weight)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, obs):
        return self.linear(obs) * torch.tensor([1.0, -2.0])


def new_weights(out, name, module, inputs):
    """<name>_params, <name>_new_params and <name>_expected_new (see above)."""
    params = TensorDict.from_module(module).data
    save(params, os.path.join(out, f"{name}_params"))
    new = params.apply(lambda t: t + 0.25 * torch.randn_like(t))
    save(new, os.path.join(out, f"{name}_new_params"))
    with torch.no_grad(), new.to_module(module):
        result = module(inputs.clone())
    save(result.select(*module.out_keys), os.path.join(out, f"{name}_expected_new"))


def gaussian_policy():
    return ProbabilisticTensorDictSequential(
        TensorDictModule(mlp(3, 4), in_keys=["obs"], out_keys=["params"]),
        TensorDictModule(NormalParamExtractor(), in_keys=["params"], out_keys=["loc", "scale"]),
        ProbabilisticTensorDictModule(
            in_keys=["loc", "scale"], out_keys=["action"], distribution_class=torch.distributions.Normal,
            return_log_prob=True,
        ),
    )


def edited(src, dst, edit_wrapper_metadata):
    """Copies package `src` to `dst` with its model's metadata JSON edited."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename.endswith("wrapper_metadata.json"):
                meta = json.loads(data)
                edit_wrapper_metadata(meta)
                data = json.dumps(meta).encode()
            zout.writestr(item, data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--modules", required=True, help="the generated Python modules (deploy.py)")
    args = parser.parse_args()
    sys.path.insert(0, args.modules)
    from deploy import PolicyStep

    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)

    # An MLP, exported at batch 5, run at batch 7.
    module = TensorDictModule(mlp(3, 2), in_keys=["obs"], out_keys=["action"])
    inputs = TensorDict(obs=torch.randn(7, 3), batch_size=[7])
    case(args.out, "mlp", module, TensorDict(obs=torch.randn(5, 3), batch_size=[5]), inputs)
    new_weights(args.out, "mlp", module, inputs)

    # A module with a constant of its own besides its weights: exported with
    # runtime constant folding (redone after each update).
    scaled = TensorDictModule(Scaled(), in_keys=["obs"], out_keys=["action"])
    inputs = TensorDict(obs=torch.randn(7, 3), batch_size=[7])
    case(args.out, "scaled", scaled, TensorDict(obs=torch.randn(5, 3), batch_size=[5]), inputs)
    new_weights(args.out, "scaled", scaled, inputs)

    # The same at a fixed batch size.
    export(module, TensorDict(obs=torch.randn(5, 3), batch_size=[5]), os.path.join(args.out, "mlp_static.pt2"),
           dynamic_batch=False)

    # Two modules, a nested in_key, an intermediate key, a second input;
    # exported at batch [4, 2], run at [3, 2].
    seq = TensorDictSequential(
        TensorDictModule(nn.Linear(3, 4), in_keys=[("agent", "obs")], out_keys=["hidden"]),
        TensorDictModule(lambda h, b: torch.relu(h) + b, in_keys=["hidden", "bias"], out_keys=[("agent", "action")]),
    )
    case(args.out, "seq", seq,
         TensorDict({("agent", "obs"): torch.randn(4, 2, 3), "bias": torch.randn(4, 2, 4)}, batch_size=[4, 2]),
         TensorDict({("agent", "obs"): torch.randn(3, 2, 3), "bias": torch.randn(3, 2, 4)}, batch_size=[3, 2]))

    # A Gaussian policy (deterministic: the action is the mean), on a
    # TensorDict and on the generated @tensorclass.
    policy = gaussian_policy()
    inputs = TensorDict(obs=torch.randn(6, 3), batch_size=[6])
    case(args.out, "gaussian", policy, TensorDict(obs=torch.randn(5, 3), batch_size=[5]), inputs)
    new_weights(args.out, "gaussian", policy, inputs)
    # The same exploring: a sample each call, baked into the package.
    export(policy, TensorDict(obs=torch.randn(5, 3), batch_size=[5]), os.path.join(args.out, "gaussian_random.pt2"),
           interaction_type="random")
    typed = gaussian_policy()
    export(typed, PolicyStep(obs=torch.randn(5, 3), batch_size=[5]), os.path.join(args.out, "typed.pt2"))
    typed_inputs = TensorDict(obs=torch.randn(6, 3), batch_size=[6])
    save(typed_inputs, os.path.join(args.out, "typed_inputs"))
    # (Python tensordict cannot run it on a PolicyStep: the intermediate
    # outputs are no fields. C++ drops them.)
    with torch.no_grad():
        result = typed(typed_inputs.clone())
    save(result.select(*typed.out_keys), os.path.join(args.out, "typed_expected"))
    new_weights(args.out, "typed", typed, typed_inputs)

    # On a GPU machine: the MLP as a CUDA package (its weights updated from
    # the CPU ones above in C++).
    if torch.cuda.is_available():
        export(module.to("cuda"), TensorDict(obs=torch.randn(5, 3), batch_size=[5], device="cuda"),
               os.path.join(args.out, "mlp_cuda.pt2"))
        module.to("cpu")

    # Broken forms of the MLP's package.
    mlp_path = os.path.join(args.out, "mlp.pt2")
    edited(mlp_path, os.path.join(args.out, "cuda.pt2"), lambda m: m.update(AOTI_DEVICE_KEY="cuda"))

    def newer(meta):
        spec = json.loads(meta["tensorclass"])
        spec["format"] = 2
        meta["tensorclass"] = json.dumps(spec)

    edited(mlp_path, os.path.join(args.out, "newer.pt2"), newer)
    edited(mlp_path, os.path.join(args.out, "plain.pt2"), lambda m: m.pop("tensorclass"))

    def relabelled(event_shape, key):
        def edit(meta):
            spec = json.loads(meta["tensorclass"])
            spec["out_keys"][0].update(event_shape=event_shape, key=key)
            meta["tensorclass"] = json.dumps(spec)

        return edit

    # Its metadata says the output is [*, 3]; the model returns [*, 2].
    edited(mlp_path, os.path.join(args.out, "mislabelled.pt2"), relabelled([3], ["action"]))
    # Its out_key is its in_key.
    edited(mlp_path, os.path.join(args.out, "in_place.pt2"), relabelled([2], ["obs"]))

    # Entries that would be extracted outside the loader's directory.
    def with_entry(dst, name, symlink=False):
        with zipfile.ZipFile(mlp_path) as zin, zipfile.ZipFile(os.path.join(args.out, dst), "w") as zout:
            for item in zin.infolist():
                zout.writestr(item, zin.read(item.filename))
            entry = zipfile.ZipInfo(name)
            if symlink:
                entry.create_system = 3
                entry.external_attr = 0o120777 << 16
            zout.writestr(entry, b"/tmp" if symlink else b"outside")

    with_entry("climbing.pt2", "data/aotinductor/model/" + "../" * 12 + "tmp/tensorclass_zip_slip_probe")
    with_entry("absolute.pt2", "/tmp/tensorclass_zip_slip_probe")
    with_entry("linked.pt2", "data/aotinductor/model/link", symlink=True)

    # The MLP compiled with its weights folded into the code: to_module
    # refuses it, and export's own check names what was lost.
    folded = export(module, TensorDict(obs=torch.randn(5, 3), batch_size=[5]), os.path.join(args.out, "folded.pt2"),
                    swappable_weights=False)
    weights = json.loads(torch._inductor.aoti_load_package(mlp_path).get_metadata()["tensorclass"])["weights"]
    expect_error(lambda: _check_swappable(folded, weights["params"]), RuntimeError,
                 f"export: the package {folded} lost ['module.2.bias'] as constants (folded into its code, or unused), "
                 "so they cannot be updated; leave the inductor options in _SWAPPABLE as they are with "
                 "swappable_weights=True")
    expect_error(lambda: export(module, TensorDict(obs=torch.randn(5, 3), batch_size=[5]), folded,
                                interaction_type=3), TypeError,
                 "export: interaction_type must be an InteractionType or its name, got 3")
    with open(mlp_path, "rb") as f:
        data = f.read()
    with open(os.path.join(args.out, "truncated.pt2"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(args.out, "garbage.pt2"), "wb") as f:
        f.write(b"PK\x03\x04" + bytes(range(256)) * 64)
    print("exported to", args.out)


if __name__ == "__main__":
    main()
