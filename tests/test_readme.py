"""The README's Python example and command-line session run and print what they say."""

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs(capsys):
    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[0] == "80"


def _console_session(text):
    """[(command, expected output lines)] of the Command line section's session."""
    section = text.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```console\n(.*?)```", section, re.S).group(1)
    steps = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def test_readme_command_line_session_prints_what_it_shows(tmp_path):
    steps = _console_session(README.read_text())
    assert steps[0][0].startswith("python -c ")  # writes the data the session reads
    assert sum(cmd.startswith("robustclust ") for cmd, _ in steps) >= 4
    bin_dir = str(Path(sys.executable).parent)  # python and robustclust of this install
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    timing = re.compile(r"\b\d+\.\d\d s\b")  # times differ from run to run
    for command, expected in steps:
        proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        want = "".join(line + "\n" for line in expected)
        assert timing.sub("T s", proc.stdout) == timing.sub("T s", want), command
