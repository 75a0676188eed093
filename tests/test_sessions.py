"""The README's and the user guide's examples run and print what they show.

The Python examples are executed and their output compared with the block that
follows them ("prints"); the console sessions (``$ command`` lines followed by
their output) are run in a temporary folder, one page's sessions after another
in the same folder (a page's later sessions use the files its first one wrote),
and each command's stdout and stderr compared with the page, times aside.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "user_guide"
DOLPHINS = ROOT / ".." / "shared" / "data" / "dolphins.gml"


# -- reading the pages ---------------------------------------------------------------------
def markdown_blocks(text, kind):
    return re.findall(rf"```{kind}\n(.*?)```", text, re.S)


def rst_blocks(text):
    """[(language, body)] of the ``.. code-block::`` directives of an RST page."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"\.\. code-block:: (\w+)\s*$", lines[i])
        if not m:
            i += 1
            continue
        i += 1
        body = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith("   ")):
            body.append(lines[i][3:])
            i += 1
        blocks.append((m.group(1), "\n".join(body).strip("\n") + "\n"))
    return blocks


def console_steps(block):
    """[(command, expected output lines)] of a console block."""
    steps = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


def run_steps(steps, where):
    """Run each command in ``where``; its stdout and stderr must be what the page shows."""
    bin_dir = str(Path(sys.executable).parent)  # python and robustclust of this install
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    timing = re.compile(r"\b\d+\.\d\d s\b")  # times differ from run to run
    for command, expected in steps:
        proc = subprocess.run(["bash", "-c", command], cwd=where, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        want = "".join(line + "\n" for line in expected).rstrip("\n")
        got = timing.sub("T s", proc.stdout).rstrip("\n")
        assert _digits(got) == _digits(timing.sub("T s", want)), command


_LONG_FLOAT = re.compile(r"-?\d+\.\d{12,}(?:e[-+]?\d+)?")


def _digits(text):
    """Full-precision numbers (the CSV outputs) to 12 significant digits: the last
    digits of a float's repr follow the BLAS library's order of summation."""
    return _LONG_FLOAT.sub(lambda m: format(float(m.group()), ".12g"), text)


def run_python(code, printed, capsys):
    exec(compile(code, "example", "exec"), {"__name__": "example"})
    assert capsys.readouterr().out.strip() == printed.strip()


# -- the README ------------------------------------------------------------------------------
def test_readme_is_short_and_installs_with_pip():
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    assert "pip install ." in text
    assert not re.search(r"\b[0-9a-f]{7}\b(?![\d.])", text)  # no commit hashes


def test_readme_example_prints_what_it_shows(capsys):
    text = README.read_text()
    code = markdown_blocks(text, "python")[0]
    printed = re.search(r"```\n(.*?)```", text.split(code, 1)[1].split("```", 1)[1],
                        re.S).group(1)
    run_python(code, printed, capsys)


def test_readme_command_line_session_prints_what_it_shows(tmp_path):
    (block,) = markdown_blocks(README.read_text(), "console")
    steps = console_steps(block)
    assert steps[0][0].startswith("python -c ")  # writes the data the session reads
    run_steps(steps, tmp_path)


def test_readme_figure_exists():
    (path,) = re.findall(r"!\[[^]]*\]\(([^)]+)\)", README.read_text())
    assert (ROOT / path).read_bytes()[:4] == b"\x89PNG"


# -- the user guide ------------------------------------------------------------------------------
def test_command_line_guide_sessions_print_what_they_show(tmp_path):
    sessions = [console_steps(body) for lang, body in
                rst_blocks((GUIDE / "command_line.rst").read_text()) if lang == "console"]
    sessions = [s for s in sessions if s and not s[0][0].startswith("pip ")]
    assert sum(cmd.startswith("robustclust ") for s in sessions for cmd, _ in s) >= 8
    for steps in sessions:
        if "dolphins.gml" in steps[0][0]:
            if not DOLPHINS.exists():
                continue  # the graph session needs the shared data set
            shutil.copy(DOLPHINS, tmp_path / "dolphins.gml")
        run_steps(steps, tmp_path)
    if DOLPHINS.exists():
        assert (tmp_path / "dolphins.png").read_bytes()[:4] == b"\x89PNG"


def test_dask_guide_session_prints_what_it_shows(tmp_path):
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    sessions = [console_steps(body) for lang, body in
                rst_blocks((GUIDE / "dask.rst").read_text()) if lang == "console"]
    sessions = [s for s in sessions if s and s[0][0].startswith("python -c ")]
    assert len(sessions) == 1
    steps = sessions[0]
    assert steps[1][0] == "robustclust fit 'data/*.parquet' -k 4 -s 80 -o labels/"
    run_steps(steps, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "labels"]


def test_kernels_guide_example_prints_what_it_shows(capsys):
    blocks = rst_blocks((GUIDE / "kernels_graphs.rst").read_text())
    (i, code), = [(i, body) for i, (lang, body) in enumerate(blocks)
                  if lang == "python" and "KernelRobustKMeans" in body][:1]
    assert blocks[i + 1][0] == "text"
    run_python(code, blocks[i + 1][1], capsys)


def test_readme_install_lines_and_commands_exist():
    import tomllib

    text = README.read_text()
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"])
    install = next(b for b in re.findall(r"```\n(.*?)```", text, re.S) if "pip install" in b)
    for line in install.splitlines():
        named = re.findall(r"'\.\[(\w+)\]'", line)
        assert all(extra in extras for extra in named), line
    targets = set(re.findall(r"(?m)^([\w-]+):", (ROOT / "Makefile").read_text()))
    commands = next(b for b in re.findall(r"```\n(.*?)```", text, re.S) if "make demo" in b)
    for line in commands.splitlines():
        assert line.split()[1] in targets, line
    assert "docs" in targets  # named in the text after the block
