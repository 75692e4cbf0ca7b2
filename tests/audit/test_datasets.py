"""Every dataset pipeline audits successfully from the command line; every dataset has its provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chainamp.audit.cli import EXIT_OK, main

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
PIPELINES = sorted(DATASETS.glob("*/*.toml"))
FOLDERS = sorted(p for p in DATASETS.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def test_there_are_dataset_pipelines():
    assert len(PIPELINES) >= 8


@pytest.mark.parametrize("path", PIPELINES, ids=[str(p.relative_to(DATASETS)) for p in PIPELINES])
def test_dataset_pipeline_audits_with_exit_0(path, capsys):
    code = main(["audit", "--json", str(path)])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err or out
    data = json.loads(out)
    assert data["ok"] and data["claims"], "each dataset pipeline has at least one claim, and all hold"
    assert data["provenance"], "each pipeline file states where its parameters come from"


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_dataset_folder_has_readme_with_provenance_and_is_indexed(folder):
    readme = folder / "README.md"
    assert readme.is_file()
    assert "provenance" in readme.read_text(encoding="utf-8").lower()
    assert f"`{folder.name}/`" in (DATASETS / "README.md").read_text(encoding="utf-8")


def test_published_numbers():
    """The datasets reproduce the closed forms their READMEs quote."""
    import math

    import chainamp as ca
    from chainamp import io as cio

    rappor = cio.audit(cio.load_pipeline(DATASETS / "rappor" / "pipeline.toml"))
    q_star, p_star = 0.6875, 0.5625  # f = 0.5, p = 0.5, q = 0.75 (Erlingsson et al. 2014)
    eps_one = 2 * math.log(q_star * (1 - p_star) / (p_star * (1 - q_star)))
    assert eps_one <= rappor.report.exact.epsilon <= eps_one * (1 + 1e-9)

    lgrr = cio.audit(cio.load_pipeline(DATASETS / "longitudinal_grr" / "pipeline.toml"))
    k, e_perm, e_2 = 10, math.exp(2.0), math.exp(0.6668319751834161)
    p1, p2 = e_perm / (e_perm + k - 1), e_2 / (e_2 + k - 1)
    q1, q2 = (1 - p1) / (k - 1), (1 - p2) / (k - 1)
    exact = math.log((p1 * p2 + (k - 1) * q1 * q2) / (p1 * q2 + q1 * p2 + (k - 2) * q1 * q2))
    binary = math.log((p1 * p2 + q1 * q2) / (p1 * q2 + q1 * p2))
    assert binary == pytest.approx(0.5, abs=1e-12)  # what multi-freq-ldpy solves for
    assert exact <= lgrr.report.exact.epsilon <= exact * (1 + 1e-9)
    assert isinstance(lgrr.report, ca.AmplificationReport)
