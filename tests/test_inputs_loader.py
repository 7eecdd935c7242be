import textwrap

import pytest
import torch

from cudaopt.evaluate.inputs import TRANSFORMS, copy_into, describe_signature_change, input_signature, make_inputs, trial_plan
from cudaopt.tasks.loader import (
    TaskError,
    apply_size,
    check_candidate,
    check_reference,
    discover_tasks,
    import_source,
    load_task,
    resolve_task,
)

REF = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    class Model(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = k
        def forward(self, x, idx):
            return x * self.k
    n = 1000
    def get_inputs():
        return [torch.randn(n, 8), torch.randint(0, 10, (n,))]
    def get_init_inputs():
        return [3]
    SMALL = {"n": 4}
    """
)


def test_inputs_are_deterministic_and_mixed():
    mod = import_source(REF, "t_ref_inputs")
    apply_size(mod, "small")
    a = make_inputs(mod, 123, "shift", "cpu")
    b = make_inputs(mod, 123, "shift", "cpu")
    assert torch.equal(a[0], b[0]) and a[0].shape == (4, 8)
    plain = make_inputs(mod, 123, "plain", "cpu")
    assert torch.allclose(a[0], plain[0] + 1.5)
    assert torch.equal(a[1], plain[1])  # integer inputs are never transformed
    assert torch.allclose(make_inputs(mod, 123, "negate", "cpu")[0], -plain[0])


def test_trial_plans_cycle_transforms_and_reuse_buffers():
    plans = [trial_plan(i) for i in range(14)]
    assert plans[0].transform == "plain" and not plans[0].reuse_buffers
    assert {p.transform for p in plans} == set(TRANSFORMS)
    assert any(p.reuse_buffers for p in plans)
    assert len({p.seed for p in plans}) == 14


def test_copy_into_keeps_addresses():
    old = [torch.zeros(3), 5]
    new = [torch.ones(3), 6]
    res = copy_into(old, new)
    assert res[0].data_ptr() == old[0].data_ptr() and torch.equal(res[0], torch.ones(3))
    assert res[1] == 6


class _Sub(torch.Tensor):
    pass


def _retyped(x):
    x.__class__ = _Sub


def _restrided(x):  # same values, column-major: `set_` onto a transposed copy
    t = x.t().contiguous().t()
    x.set_(t.untyped_storage(), 0, t.shape, t.stride())


@pytest.mark.parametrize("change, what", [
    (_retyped, "class"),
    (_restrided, "strides"),
    (lambda x: setattr(x, "sum", lambda *a, **k: None), "attributes"),  # shadows Tensor.sum on this object
    (lambda x: x.requires_grad_(True), "requires_grad"),
    (lambda x: x.set_(x.clone()), "storage"),
    pytest.param(lambda x: x.rename_("rows", "cols"), "names", marks=pytest.mark.skipif(
        not hasattr(torch.Tensor, "rename_"), reason="this torch has no named tensors")),
])
def test_input_signature_sees_what_a_value_compare_cannot(change, what):
    """Each change keeps every value bit for bit (input_mutation's compare passes) but alters what the
    reference, handed the same tensor object next, runs on."""
    x = torch.randn(6, 4)
    values = x.detach().clone()
    before = input_signature([x, 3])
    assert input_signature([x, 3]) == before  # reading it changes nothing
    change(x)
    assert torch.equal(x.detach(), values)
    after = input_signature([x, 3])
    assert after != before
    assert what in describe_signature_change(before, after)


def test_input_signature_ignores_new_values_and_sees_a_swapped_object():
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    before = input_signature([x, [y]])
    x.copy_(torch.randn(4, 4))  # the harness's own copy_into of a round's values
    assert input_signature([x, [y]]) == before
    assert input_signature([x, [y.clone()]]) != before  # an element of a nested list replaced
    assert "object" in describe_signature_change(before, input_signature([x.clone(), [y]]))


def test_loader_errors_are_one_line(tmp_path):
    with pytest.raises(TaskError, match="no such file"):
        load_task(tmp_path / "missing.py")
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n")
    with pytest.raises(TaskError, match="syntax error"):
        import_source(bad.read_text(), "t_bad", str(bad))
    mod = import_source("x = 1\n", "t_noref")
    with pytest.raises(TaskError, match="lacks `Model`"):
        check_reference(mod, "ref.py")
    ref = import_source(REF, "t_ref_sig")
    cand = import_source("import torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self, k, extra):\n        super().__init__()\n", "t_cand_sig")
    with pytest.raises(TaskError, match="does not match"):
        check_candidate(cand, ref, "cand.py")
    nocls = import_source("x = 2\n", "t_cand_none")
    with pytest.raises(TaskError, match="lacks `class ModelNew`"):
        check_candidate(nocls, ref, "cand.py")
    with pytest.raises(TaskError, match="failed to import"):
        import_source("raise RuntimeError('boom')\n", "t_raise")


def test_small_size_needs_small_dict():
    mod = import_source(REF.replace('SMALL = {"n": 4}', ""), "t_nosmall")
    with pytest.raises(TaskError, match="no SMALL"):
        apply_size(mod, "small")


def test_discover_folder_and_kernelbench_layout(tmp_path):
    kb = tmp_path / "KernelBench"
    for lv in (1, 2):
        (kb / f"level{lv}").mkdir(parents=True)
        (kb / f"level{lv}" / f"{lv}_task.py").write_text(REF)
    tasks = discover_tasks(tmp_path)
    assert [(t.name, t.level) for t in tasks] == [("1_task", 1), ("2_task", 2)]
    assert len(discover_tasks(kb / "level1")) == 1
    with pytest.raises(TaskError):
        discover_tasks(tmp_path / "nothing")


def test_resolve_builtin_name():
    from cudaopt.tasks import builtin_tasks

    tasks = builtin_tasks()
    if not tasks:
        pytest.skip("no built-in tasks yet")
    assert resolve_task(tasks[0].name).source == tasks[0].source
    with pytest.raises(TaskError, match="no built-in task"):
        resolve_task("definitely_not_a_task")


def test_gpu_pinning_maps_the_index_through_visible_devices():
    from cudaopt.evaluate.child import visible_devices_for

    assert visible_devices_for(1, None) == "1"
    assert visible_devices_for(1, "4,6") == "6"
    assert visible_devices_for(0, "GPU-abc, GPU-def") == "GPU-abc"
    with pytest.raises(RuntimeError, match="only 2 GPUs"):
        visible_devices_for(2, "0,1")
