"""Runs a Python script (or module) with every eligible torch product of it through tuned:

    python -m tuned.run train.py --its --arguments
    python -m tuned.run -m some.module --its --arguments

the same as `TUNED_TORCH=1 python train.py ...`: tuned.torch_op.enable() before the script runs,
in its main thread (see tuned.torch_op for what is routed and what torch keeps)."""
import runpy
import sys


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 0 if argv else 2
    import tuned.torch_op
    tuned.torch_op.enable()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("tuned.run: -m needs a module name", file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
