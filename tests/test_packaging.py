"""Installing cgr: ranges in pyproject.toml, our exact versions in requirements/lock.txt, the
lowest declared versions in requirements/lowest.txt (scripts/check_lowest.sh), and a wheel
that carries everything read at run time."""

import re
import subprocess
import sys
import zipfile

import pytest
from packaging.requirements import Requirement

from tests.conftest import ROOT

tomllib = pytest.importorskip("tomllib")  # Python 3.11+ (3.10: skipped)


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [
        Requirement(d) for d in [*project["dependencies"], *project["optional-dependencies"]["cpu"]]
    ]


def pins(path) -> dict[str, str]:
    lines = (ROOT / path).read_text().splitlines()
    found = [line.split("==") for line in lines if "==" in line and not line.startswith("#")]
    return {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in found}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_dependency_is_a_range_and_the_lock_satisfies_it():
    lock = pins("requirements/lock.txt")
    for req in declared():
        assert not any(s.operator == "==" for s in req.specifier), f"{req}: a pin, not a range"
        assert norm(req.name) in lock, f"{req.name} missing from requirements/lock.txt"
        assert req.specifier.contains(lock[norm(req.name)], prereleases=True), (
            req,
            lock[norm(req.name)],
        )


def test_lowest_txt_is_pyproject_lower_bounds():
    lowest = pins("requirements/lowest.txt")
    for req in declared():
        floor = [s.version for s in req.specifier if s.operator == ">="]
        assert floor and lowest.get(norm(req.name)) == floor[0], req
    assert lowest["torch"] == "2.11" and lowest["transformers"] == "5.17"


@pytest.mark.slow
def test_the_wheel_carries_the_package_and_what_it_reads_at_run_time(tmp_path):
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                           str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("cgr-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {str(p.relative_to(ROOT)) for p in (ROOT / "cgr").rglob("*.py")}
    assert sources <= names, sorted(sources - names)[:5]
    assert "cgr/chains/report.html" in names  # the chains page template, read at import
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "cgr = cgr.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)
