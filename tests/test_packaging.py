"""Installing cgr: ranges in pyproject.toml, our exact versions in requirements/lock.txt, the
lowest declared versions in requirements/lowest.txt (scripts/check_lowest.sh), and a wheel
that carries everything read at run time."""

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.conftest import ROOT

tomllib = pytest.importorskip("tomllib")  # Python 3.11+ (3.10: skipped)


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    named = [d for name in ("cpu", "ircot", "riches", "serve") for d in extras[name]]
    return [Requirement(d) for d in [*project["dependencies"], *named] if not d.startswith("cgr[")]


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


def test_the_gpu_lock_differs_from_the_cpu_lock_only_in_torch_and_faiss():
    cpu, gpu = pins("requirements/lock.txt"), pins("requirements/lock-gpu.txt")
    assert cpu["torch"].endswith("+cpu") and gpu["torch"] == cpu["torch"].removesuffix("+cpu")
    assert "faiss-cpu" in cpu and "faiss-gpu" in gpu and "faiss-gpu" not in cpu
    others = {k: v for k, v in cpu.items() if k not in ("torch", "faiss-cpu")}
    assert others == {k: v for k, v in gpu.items() if k not in ("torch", "faiss-gpu")}
    for req in declared():
        if norm(req.name) in ("faiss-gpu",):
            assert req.specifier.contains(gpu["faiss-gpu"])


def test_setup_gpu_dry_run_names_the_cuda_torch_and_installs_nothing(tmp_path):
    venv = tmp_path / "g"
    for how in (["gpu", "--dry-run"], ["--dry-run"]):
        env = {"PATH": "/usr/bin:/bin", "CGR_VENV": str(venv), "HOME": str(tmp_path)}
        if how == ["--dry-run"]:
            env["CGR_TORCH"] = "cuda"
        out = subprocess.run(["bash", "scripts/setup_env.sh", *how], cwd=ROOT, env=env,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert "torch==2" in out and "+cpu" not in out and "faiss-gpu==" in out
        assert not venv.exists()


def test_setup_refuses_a_cpu_torch_over_a_cuda_one(tmp_path):
    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*")) / "site-packages" / "torch"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    (site / "version.py").write_text("__version__ = '2.13.0'\ncuda: Optional[str] = '12.8'\n")
    done = subprocess.run(["bash", "scripts/setup_env.sh"], cwd=ROOT, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "CGR_VENV": str(venv)})  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "built for CUDA 12.8" in done.stderr and "setup_env.sh gpu" in done.stderr


@pytest.mark.slow
def test_train_sh_runs_in_an_active_environment_and_installs_nothing(tmp_path):
    venv = Path(sys.executable).parent.parent
    env = {"PATH": f"{venv}/bin:/usr/bin:/bin", "VIRTUAL_ENV": str(venv), "HOME": str(tmp_path),
           "CGR_SIGNING_KEY": str(tmp_path / "key")}  # fmt: skip
    done = subprocess.run(["bash", "scripts/train.sh", "configs/default.yaml", "--print_config"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "seed_everything: 33" in done.stdout
    assert "using the active environment" in done.stderr and "[setup]" not in done.stderr


def test_a_command_missing_its_extra_names_it_in_one_line(monkeypatch, capsys):
    from cgr import cli

    def needs_fastapi(argv):
        raise ModuleNotFoundError("No module named 'fastapi'", name="fastapi")

    monkeypatch.setitem(cli.COMMANDS, "serve", needs_fastapi)
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: this needs the 'serve' extra (module fastapi is not installed): "
                   "pip install 'cgr[serve]', or scripts/setup_env.sh, which installs every extra"]  # fmt: skip


def test_the_core_install_leaves_the_modes_backends_to_extras():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {norm(Requirement(d).name) for d in project["dependencies"]}
    assert not core & {"xllamacpp", "ctranslate2", "fm-index", "fastapi", "uvicorn", "openai"}
    assert project["optional-dependencies"]["all"] == ["cgr[ircot,riches,serve]"]
