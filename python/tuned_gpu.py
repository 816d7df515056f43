"""`import tuned_gpu as tuned`: this package's `tuned`, or an ImportError that says why not.

Another Python package is called `tuned` too: the system tuning daemon's (installed by default on
RHEL and Fedora; Debian's and Ubuntu's package `tuned` has it too), which `import tuned` may find
first where this environment sees the system's packages. This module, installed beside our
`tuned`, checks which one `import tuned` finds: where it is ours, tuned_gpu is that package; else
the ImportError names both folders and the fix.
"""
import importlib
import importlib.util
import os
import sys

_OURS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tuned")


def _same_folder(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _found():
    """The folder (or file) `import tuned` takes tuned from in this process, or None."""
    module = sys.modules.get("tuned")
    if module is not None:
        paths = list(getattr(module, "__path__", []) or [])
        return paths[0] if paths else getattr(module, "__file__", None) or repr(module)
    spec = importlib.util.find_spec("tuned")
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    return spec.origin


def _check():
    found = _found()
    if found is not None and _same_folder(found, _OURS):
        return
    where = "finds nothing" if found is None else f"finds {found}"
    raise ImportError(
        f"tuned_gpu: `import tuned` {where}, not the GPU kernel package tuned installed beside "
        f"this module ({_OURS}). Another package named tuned (the system tuning daemon's, on "
        f"RHEL and Fedora) comes first on sys.path. Fix: install tuned in a virtual environment "
        f"that does not see the system's packages (python3 -m venv ENV; ENV/bin/pip install "
        f"tuned-*.whl), or put {os.path.dirname(_OURS)} first on PYTHONPATH.")


_check()
sys.modules[__name__] = importlib.import_module("tuned")
