"""benchmarks/warm_kernel_cache.py fills the kernel cache without a GPU: every program it lists is
stored under the very key lapcli.cuda.runtime.load looks up on a device of that architecture."""

import importlib.util
from pathlib import Path

from lapcli.cuda import compiler, points

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "warm_kernel_cache.py"


def load_script():
    spec = importlib.util.spec_from_file_location("warm_kernel_cache", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_warmed_cubins_lie_where_the_runtime_looks(tmp_path, monkeypatch):
    monkeypatch.setenv("LAPCLI_CACHE_DIR", str(tmp_path))
    compiled = []

    def fake_nvrtc(label, source, options, names):  # NVRTC is not installed here: the key is what matters
        compiled.append(label)
        return b"cubin of " + label.encode(), {name: f"lowered_{name}" for name in names}

    monkeypatch.setattr(compiler, "nvrtc_compile", fake_nvrtc)
    script = load_script()
    chosen = script.programs((2, 3))
    labels = [program.label for program in chosen]
    assert labels.count("points") == labels.count("points-auction") == 2 * len(points.METRIC_CODES)
    assert {"hungarian", "dense-auction", "certificate", "sap_cluster", "ragged"} <= set(labels)
    for program in chosen:
        script.compile_one(program, (9, 0))
    assert len(compiled) == len(chosen)
    for program in chosen:  # what runtime.load asks of the cache on an sm_90 device
        names = {name: expression for name, expression, _ in program.kernels}
        cubin, lowered = compiler.compiled_cubin(program.label, program.source,
                                                 compiler.compile_options(program.defines, (9, 0)), names)
        assert cubin == b"cubin of " + program.label.encode() and set(lowered) == set(names)
    assert len(compiled) == len(chosen)  # every one read back, none compiled again
