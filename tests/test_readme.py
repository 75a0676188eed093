"""The README's Python example and command-line sessions run and print what they say."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
DOLPHINS = README.parent / ".." / "shared" / "data" / "dolphins.gml"


def test_readme_example_runs(capsys):
    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[0] == "80"


def _console_sessions(text, title="Command line"):
    """[[(command, expected output lines)], ...]: the sessions of a section (## title)."""
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    sessions = []
    for block in re.findall(r"```console\n(.*?)```", section, re.S):
        steps = []
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        sessions.append(steps)
    return sessions


def test_readme_command_line_session_prints_what_it_shows(tmp_path):
    steps = _console_sessions(README.read_text())[0]
    assert steps[0][0].startswith("python -c ")  # writes the data the session reads
    assert sum(cmd.startswith("robustclust ") for cmd, _ in steps) >= 4
    _run_session(steps, tmp_path)


@pytest.mark.skipif(not DOLPHINS.exists(), reason="../shared/data/dolphins.gml is absent")
def test_readme_graph_session_prints_what_it_shows(tmp_path):
    sessions = _console_sessions(README.read_text())
    assert len(sessions) == 2
    steps = sessions[1]
    assert steps[0][0].startswith("robustclust fit dolphins.gml ")
    shutil.copy(DOLPHINS, tmp_path / "dolphins.gml")
    _run_session(steps, tmp_path)
    assert (tmp_path / "dolphins.png").read_bytes()[:4] == b"\x89PNG"


def test_readme_dask_session_prints_what_it_shows(tmp_path):
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    sessions = _console_sessions(README.read_text(), "Data larger than memory")
    assert len(sessions) == 1
    steps = sessions[0]
    assert steps[0][0].startswith("python -c ")  # writes the Parquet files the session reads
    assert steps[1][0] == "robustclust fit 'data/*.parquet' -k 4 -s 80 -o labels/"
    _run_session(steps, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "labels"]


#: README lines whose numbers changed meaning, while README.md is being rewritten
#: elsewhere: shown -> printed now.  Issue 44: a refined model scores new rows by
#: its fit's definition, the whole distance to the nearest centre (eq. (3)),
#: not the O-step's ||r|| - lambda_ / 2 (5.5 / 2 less).  Remove once README.md
#: shows the new lines (nothing is replaced then).
PENDING_README_LINES = {
    "3    7.893": "3    10.64",
    "9,9,-1,True,7.893455988461136": "9,9,-1,True,10.643318805737437",
}


def _run_session(steps, where):
    """Run each command in ``where``; its stdout and stderr must be what the README shows."""
    bin_dir = str(Path(sys.executable).parent)  # python and robustclust of this install
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    timing = re.compile(r"\b\d+\.\d\d s\b")  # times differ from run to run
    for command, expected in steps:
        proc = subprocess.run(["bash", "-c", command], cwd=where, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        want = "".join(PENDING_README_LINES.get(line, line) + "\n" for line in expected)
        assert _digits(timing.sub("T s", proc.stdout)) == _digits(timing.sub("T s", want)), \
            command


_LONG_FLOAT = re.compile(r"-?\d+\.\d{12,}(?:e[-+]?\d+)?")


def _digits(text):
    """Full-precision numbers (the CSV outputs) to 12 significant digits: the last
    digits of a float's repr follow the BLAS library's order of summation."""
    return _LONG_FLOAT.sub(lambda m: format(float(m.group()), ".12g"), text)
