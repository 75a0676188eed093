"""The README's kernel and graph example runs and prints what it says."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_kernel_example(capsys):
    text = README.read_text().split("## Kernels and graphs", 1)[1]
    code, printed = re.findall(r"```(?:python)?\n(.*?)```", text, re.S)[:2]
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == printed.strip()
