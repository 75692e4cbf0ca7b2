"""docs/distributed.md (issue 11): its example runs, on the session's real LocalCluster."""

from __future__ import annotations

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "distributed.md"


class _Shared:
    """The session's cluster or client standing in for the ones the example creates (closing is a no-op)."""

    def __init__(self, target):
        self._target = target

    def __getattr__(self, name):
        return getattr(self._target, name)

    def close(self):
        pass


def test_the_example_runs(dask_client, monkeypatch, capsys):
    distributed = pytest.importorskip("distributed")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1 and "LocalCluster(n_workers=2, threads_per_worker=1)" in blocks[0]
    import dask
    import dask.distributed

    for module in (distributed, dask.distributed):  # the example imports from dask.distributed
        monkeypatch.setattr(module, "LocalCluster", lambda **kw: _Shared(dask_client.cluster))
        monkeypatch.setattr(module, "Client", lambda cluster: _Shared(dask_client))

    with dask.config.set(scheduler=dask_client):  # what Client(cluster) does: the default scheduler
        exec(compile(blocks[0], str(DOC), "exec"), {"__name__": "docs_distributed"})
    out = capsys.readouterr().out
    assert "headline" in out and "Certified" in out
