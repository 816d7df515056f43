"""TUNED_TORCH=1 with no change to the program: every eligible torch product through tuned.

The wheel's tuned-torch.pth calls install() as Python starts where TUNED_TORCH is set. Routing
needs torch, and importing torch (or libtuned) then would cost every program that never uses it
and could not see a torch that a later site folder holds; so install() only waits for the
program's own `import torch` and, once torch is loaded, imports tuned (through tuned_gpu: never
another package named tuned), whose import reads TUNED_TORCH and enables routing in that thread.
Nothing here may stop the program: a failure is one warning, and torch runs as it is.
"""
import importlib.abc
import importlib.util
import sys
import warnings


def _enable():
    if "tuned" in sys.modules:  # the program imported tuned itself: its import reads TUNED_TORCH
        return
    try:
        import tuned_gpu  # noqa: F401
    except Exception as e:  # noqa: BLE001
        warnings.warn(f"TUNED_TORCH is set but tuned cannot start: {e}", RuntimeWarning)


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: on the first import of torch it lets the other finders find it and
    runs _enable once torch's module has executed."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)  # once
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute = spec.loader.exec_module

        def execute_then_enable(module):
            execute(module)
            _enable()
        spec.loader.exec_module = execute_then_enable
        return spec


def install():
    if "torch" in sys.modules:
        _enable()
    elif not any(isinstance(f, _AfterTorch) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterTorch())
