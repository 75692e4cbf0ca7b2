"""Execute every examples/*.ipynb top to bottom (nbclient, python3 kernel) so the notebooks never rot.

Each notebook runs in the examples/ directory with MPLBACKEND=Agg and the repository root on
PYTHONPATH (so an uninstalled checkout works too). Committed notebooks must carry no outputs.

The default run executes every notebook, every cell, in ONE kernel shared by the module, reset before each
notebook (``%reset -f``: a name a notebook forgot to define or import fails as in a fresh kernel; figures closed;
the working directory restored): a kernel's start and imports cost ~2 s of CPU, most of a small notebook's
cost. ``-m slow`` also runs each notebook in a kernel of its own, exactly as a reader would
(``test_notebook_runs_in_a_fresh_kernel``).
"""

from __future__ import annotations

import os
import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

pytestmark = pytest.mark.notebooks  # the slowest part of the default run: -m "not slow and not notebooks" skips it

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
CELL_TIMEOUT = 120  # seconds per cell


def test_the_notebooks_are_there():
    assert {p.stem for p in NOTEBOOKS} >= {"quickstart", "rappor_audit", "random_walk_graph", "ou_vs_gaussian", "design",
                                          "longitudinal_audit", "shuffle_audit"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_without_outputs(path):
    book = nbformat.read(path, as_version=4)
    nbformat.validate(book)
    for i, cell in enumerate(book.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name} cell {i} has outputs"


def _kernel_env() -> dict:
    return {**os.environ, "MPLBACKEND": "Agg",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def _client(book, km=None):
    return nbclient.NotebookClient(book, km=km, timeout=CELL_TIMEOUT, kernel_name="python3",
                                   resources={"metadata": {"path": str(EXAMPLES)}})


def _run(path, km=None, reset=False):
    """Execute the notebook at ``path`` top to bottom (in ``km``'s kernel, reset first, if given): every cell runs,
    none errs, no file is left behind."""
    book = nbformat.read(path, as_version=4)
    if reset:  # a fresh namespace, no figures, the notebook's directory: what a new kernel would give; then the
        # kernel's heap (its modules, alive for good) is frozen out of the collector's traversals (gc.freeze): the
        # reset's two full collections took ~0.25 s of CPU a notebook, and every full collection inside a notebook
        # walked the modules the earlier notebooks imported
        book.cells.insert(0, nbformat.v4.new_code_cell(
            "%reset -f\nimport gc as _gc, os as _os, matplotlib.pyplot as _plt\n"
            f"_plt.close('all'); _os.chdir({str(EXAMPLES)!r}); _gc.freeze(); del _gc, _os, _plt"))
    client = _client(book, km)
    before = {p.name for p in EXAMPLES.iterdir()}
    try:
        client.execute()  # raises CellExecutionError (with the traceback) on the first failing cell
    finally:
        if km is not None and client.kc is not None:
            client.kc.stop_channels()  # the kernel stays up for the next notebook
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert {p.name for p in EXAMPLES.iterdir()} == before  # a notebook leaves no files behind


@pytest.fixture(scope="module")
def kernel():
    """One python3 kernel for the module's notebooks (started in examples/ with MPLBACKEND=Agg and the repository
    on PYTHONPATH), shut down after the last one."""
    from jupyter_core.utils import run_sync

    starter = _client(nbformat.v4.new_notebook())
    km = starter.create_kernel_manager()
    starter.start_new_kernel(cwd=str(EXAMPLES), env=_kernel_env())
    try:
        yield km
    finally:
        run_sync(km.shutdown_kernel)(now=False)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, kernel):
    _run(path, kernel, reset=True)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_a_fresh_kernel(path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", _kernel_env()["PYTHONPATH"])
    _run(path)


def test_a_reset_kernel_forgets_the_previous_notebook(kernel, tmp_path):
    """The shared kernel hides nothing a fresh one would show: a name defined by one notebook is undefined in the
    next, so a notebook that forgot an import or a definition still fails."""
    first, second = tmp_path / "first.ipynb", tmp_path / "second.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import numpy as np\nleft = 1")]), first)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(np, left)")]), second)
    _run(first, kernel, reset=True)
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="NameError"):
        _run(second, kernel, reset=True)


def test_the_notebook_extra_installs_what_runs_them():
    """Issue 18: `.[notebook]` lacked a runner and ipywidgets (tqdm warns without it in a notebook)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(ROOT / "pyproject.toml", "rb") as fh:
        extra = tomllib.load(fh)["project"]["optional-dependencies"]["notebook"]
    names = {req.split(">")[0].split("=")[0].split("[")[0].strip() for req in extra}
    assert {"ipykernel", "nbclient", "nbformat", "ipywidgets", "matplotlib"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_runs_on_python_310_and_is_listed(path):
    """Issue 18: longitudinal_audit imported tomllib (absent on 3.10, which chainamp supports); the examples README
    omitted design.ipynb."""
    book = nbformat.read(path, as_version=4)
    for i, cell in enumerate(book.cells):
        if cell.cell_type == "code" and "import tomllib" in cell.source:
            assert "import tomli as tomllib" in cell.source, f"{path.name} cell {i}: tomllib without the 3.10 fallback"
    assert f"]({path.name})" in (EXAMPLES / "README.md").read_text(encoding="utf-8")
