"""`cgr export` on real tiny runs: the model folder opens with plain transformers and
sentence-transformers, predicts exactly as its checkpoint, and a bad folder is one line, exit 2,
before any model loads."""

import json
import shutil
import subprocess
import sys

import pytest
import torch

import cgr
from cgr.cli import main
from tests.conftest import ROOT, SAMPLE
from tests.training.helpers import tiny_config

pytestmark = pytest.mark.slow  # real training, export and model loading
CGR = "cgr.training.cgr_module.CGRModule"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny CGR run of two epochs (its evidence refreshed once), trained with
    --export-model as scripts/train.sh does: folder with ckpt/best.ckpt and ckpt/model."""
    tmp_path = tmp_path_factory.mktemp("export")
    config = tiny_config(tmp_path, CGR, trainer_args={"max_epochs": 2, "limit_train_batches": 2})
    assert main(["train", "--config", str(config), "--export-model"]) == 0
    return tmp_path


def run_cli(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cgr.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)  # fmt: skip


def test_train_exports_a_model_folder_in_safetensors(exported):
    model = exported / "ckpt" / "model"
    config = json.loads((model / "cgr_config.json").read_text())
    # best.ckpt is epoch 2's (its reader read the refreshed snapshot's evidence) unless epoch 2
    # did not beat epoch 1, whose reader read the base encoder's
    epoch = torch.load(exported / "ckpt" / "best.ckpt", map_location="cpu", weights_only=True)[
        "epoch"
    ]
    assert config["module"] == "CGRModule"
    assert config["query_encoder"]["from"] == ("snapshot" if epoch >= 1 else "base")
    assert config["data"]["retrieval"]["corpus"] == ["corpus/facts.txt"]
    assert (model / "corpus" / "facts.txt").read_bytes() == (SAMPLE / "facts.txt").read_bytes()
    files = [p.name for p in model.rglob("*") if p.is_file()]
    assert "model.safetensors" in files and not [
        f for f in files if f.endswith((".bin", ".pt", ".pkl"))
    ]
    card = (model / "README.md").read_text()
    acc = config["training"]["dev_metrics"]["val/acc"]
    assert f"dev accuracy when saved: **{100 * acc:.1f} %**" in card
    assert "from_pretrained" in card and "license: apache-2.0" in card
    best = (exported / "ckpt" / "best.ckpt").stat().st_size
    last = (exported / "ckpt" / "last.ckpt").stat().st_size
    assert best < last / 2  # weights only; last.ckpt keeps the optimiser state to resume from


def test_the_folder_opens_with_plain_transformers_and_sentence_transformers(exported):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModelForMultipleChoice, AutoTokenizer

    model = exported / "ckpt" / "model"
    reader = AutoModelForMultipleChoice.from_pretrained(model / "reader")
    tokenizer = AutoTokenizer.from_pretrained(model / "reader")
    enc = tokenizer(["plants take in", "plants take in"], ["carbon dioxide", "oxygen"],
                    padding=True, return_tensors="pt")  # fmt: skip
    logits = reader(**{k: v.unsqueeze(0) for k, v in enc.items()}).logits
    assert logits.shape == (1, 2)
    assert SentenceTransformer(str(model / "query_encoder")).encode(["hi"]).shape == (1, 384)


def test_folder_predicts_exactly_as_the_checkpoint(exported, tmp_path, capsys):
    ckpt, model = exported / "ckpt" / "best.ckpt", exported / "ckpt" / "model"
    outs = []
    for flag, path in (("--checkpoint", ckpt), ("--model", model)):
        out = tmp_path / f"{flag[2:]}.jsonl"
        assert (
            main(["eval", flag, str(path), "--data", str(SAMPLE / "dev.jsonl"), "--out", str(out)])
            == 0
        )
        outs.append([json.loads(line) for line in out.read_text().splitlines()])
    lines = capsys.readouterr().out.splitlines()
    assert [x for x in lines if x.startswith("accuracy:")][0] == [
        x for x in lines if x.startswith("accuracy:")
    ][1]
    for a, b in zip(*outs, strict=True):
        assert a["predicted"] == b["predicted"]
        assert [c["score"] for c in a["choices"]] == pytest.approx(
            [c["score"] for c in b["choices"]], abs=1e-5
        )
        assert [c["facts"] for c in a["choices"]] == [c["facts"] for c in b["choices"]]
    predictor = cgr.Predictor.from_pretrained(model)
    p = predictor.predict_file(SAMPLE / "dev.jsonl")
    assert [x.answer for x in p] == [r["predicted"] for r in outs[1]]


def test_a_copied_folder_answers_from_another_working_folder(exported, tmp_path):
    """The folder is self-contained (its corpus inside, paths relative to it), and a folder
    this user did not sign may still read its own files."""
    model = tmp_path / "published"
    shutil.copytree(exported / "ckpt" / "model", model)
    config = json.loads((model / "cgr_config.json").read_text())
    config.pop("signature")
    (model / "cgr_config.json").write_text(json.dumps(config))
    done = run_cli("explain", "--model", str(model), "--question", "Which energy source is renewable?",
                   "--choices", "coal", "a solar panel", "--out-dir", str(tmp_path / "x"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "answer: (" in done.stdout


def _broken(exported, tmp_path, change) -> str:
    model = tmp_path / "bad"
    shutil.copytree(exported / "ckpt" / "model", model)
    change(model)
    done = run_cli(
        "eval",
        "--model",
        str(model),
        "--data",
        str(SAMPLE / "dev.jsonl"),
        "--out",
        str(tmp_path / "o.jsonl"),
    )
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Loading" not in done.stderr  # refused before any model loads
    return errors[0]


def _edit_config(model, **changes):
    from benchmarks.common import edit_json

    edit_json(model / "cgr_config.json", changes, sep="__")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: (m / "cgr_config.json").unlink(), "cgr_config.json: missing"),
        (lambda m: (m / "reader" / "model.safetensors").unlink(), "no *.safetensors weights (the reader)"),
        (lambda m: (m / "reader" / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01."),
         "pytorch_model.bin: a pickle file where safetensors weights belong"),
        (lambda m: (m / "query_encoder" / "model.safetensors").write_bytes(b"\x00" * 8),
         "model.safetensors: not a readable safetensors file"),
        (lambda m: (m / "corpus" / "facts.txt").unlink(), "data.retrieval.corpus[0] names 'corpus/facts.txt', which is missing"),
        (lambda m: _edit_config(m, data__retrieval__corpus=["/etc/hostname"]),
         "data.retrieval.corpus[0] names '/etc/hostname', outside"),
        (lambda m: (m / "cgr_config.json").write_text("{not json"), "cgr_config.json: not JSON"),
        (lambda m: _edit_config(m, format_version=9), "format_version 9 is not one this cgr reads"),
        (lambda m: (m / "query_encoder" / "modules.json").write_text(json.dumps([{"type": "os.system"}])),
         "module 0 type 'os.system' is not a sentence-transformers class"),
    ],
)  # fmt: skip
def test_a_bad_folder_is_one_line_before_any_model_loads(exported, tmp_path, change, message):
    assert message in _broken(exported, tmp_path, change)


def test_a_checkpoint_written_elsewhere_reads_no_file_outside_its_folder(exported, tmp_path):
    """A checkpoint that passes weights_only but names a local file as its corpus (re-saved,
    so this user's signature no longer matches) is refused until a root allows the file."""
    import torch

    ckpt = torch.load(exported / "ckpt" / "best.ckpt", map_location="cpu", weights_only=True)
    secret = tmp_path / "private" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the password is swordfish\n")
    ckpt["datamodule_hyper_parameters"]["retrieval"]["corpus"] = [str(secret)]
    (tmp_path / "downloads").mkdir()
    crafted = tmp_path / "downloads" / "crafted.ckpt"
    torch.save(ckpt, crafted)
    args = ["explain", "--checkpoint", str(crafted), "--question", "What is the password?",
            "--choices", "swordfish", "salmon", "--out-dir", str(tmp_path / "x")]  # fmt: skip
    done = run_cli(*args)
    assert done.returncode == 2 and "swordfish" not in done.stdout
    assert f"data.retrieval.corpus[0] names '{secret}', outside {crafted.parent}" in done.stderr
    assert "--data-root" in done.stderr and "Loading" not in done.stderr
    # a symlink inside the checkpoint's folder leading out of it is outside too
    (tmp_path / "downloads" / "link.txt").symlink_to(secret)
    ckpt["datamodule_hyper_parameters"]["retrieval"]["corpus"] = [
        str(tmp_path / "downloads" / "link.txt")
    ]
    torch.save(ckpt, crafted)
    assert "outside" in run_cli(*args).stderr
    # the user names the roots: then it reads them
    roots = ["--data-root", str(secret.parent), "--data-root", str(SAMPLE)]
    assert run_cli(*args, *roots).returncode == 0


def test_export_refuses_a_non_empty_folder_and_a_folder_as_checkpoint(exported, tmp_path, capsys):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    ckpt = str(exported / "ckpt" / "best.ckpt")
    assert main(["export", "--checkpoint", ckpt, "--out", str(tmp_path / "full")]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "full" / "x").read_text() == "mine"
    assert main(["eval", "--model", str(exported / "ckpt" / "model")]) == 2
    assert "--data" in capsys.readouterr().err


def test_a_reader_checkpoint_exports_without_a_query_encoder(tiny_run, tmp_path, capsys):
    out = tmp_path / "reader_model"
    assert main(["export", "--checkpoint", str(tiny_run / "ckpt" / "best.ckpt"), "--out", str(out),
                 "--dtype", "float16"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert f"model: {out}" in printed and "the checkpoint:" in printed
    config = json.loads((out / "cgr_config.json").read_text())
    assert config["query_encoder"] is None and config["dtype"] == "float16"
    assert not (out / "query_encoder").exists()
    p = cgr.Predictor.from_pretrained(out).predict(
        "Which energy source is renewable?", ["coal", "a solar panel"]
    )
    assert p.answer in {"A", "B"}


def test_a_folder_answers_loading_each_model_once(exported, monkeypatch):
    """The query encoder from the folder and the base encoder (relevance) once each: the
    retriever shares the pipeline's base encoder and never loads it for its queries."""
    from cgr.retrieval import encoders

    loaded = []
    real = encoders.load_sentence_encoder
    monkeypatch.setattr(encoders, "load_sentence_encoder",
                        lambda name, device=None, plain=False: loaded.append(name)
                        or real(name, device, plain))  # fmt: skip
    predictor = cgr.Predictor.from_pretrained(exported / "ckpt" / "model")
    predictor.predict("Which is renewable?", ["coal", "a solar panel"])
    assert len(loaded) == len(set(loaded)) and len(loaded) <= 2, loaded


def test_explain_scores_a_folder_without_importing_lightning(exported, tmp_path):
    """A folder's reader scores outside a Trainer: `cgr explain` imports no Lightning (a second
    and a half of its start; benchmarks/explain_speed.py), and answers as the Python API does.
    Its encoders load without sentence-transformers (scikit-learn, SciPy: 2 s more), and with
    the AMR cache warm spaCy loads only in the child that writes the hypotheses."""
    model = exported / "ckpt" / "model"
    argv = ["explain", "--model", str(model), "--question", "Which is renewable?",
            "--choices", "coal", "a solar panel", "--out-dir", str(tmp_path / "explain")]  # fmt: skip
    heavy = ("pytorch_lightning", "sentence_transformers", "sklearn", "spacy")
    code = ("import sys\nfrom cgr.cli import main\n"
            f"code = main({argv!r})\n"
            f"print('IMPORTED', [m for m in {heavy!r} if m in sys.modules], 'CODE', code)")  # fmt: skip
    for _ in range(2):  # the first may parse the question's hypotheses (spaCy); the second not
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                             text=True, timeout=600)  # fmt: skip
    assert "IMPORTED [] CODE 0" in out.stdout, out.stdout + out.stderr[-2000:]
    answer = cgr.Predictor.from_pretrained(model).predict("Which is renewable?",
                                                          ["coal", "a solar panel"])  # fmt: skip
    assert f"answer: ({answer.answer}) " in out.stdout


def test_a_chain_ranker_the_settings_name_is_copied_into_the_folder(tiny_run, tmp_path):
    """A model folder ranks its chains with the ranker it was trained beside, wherever it goes:
    the ranker folder is copied in and named relative to the model folder."""
    from cgr.pretrained.export import export_model
    from cgr.pretrained.source import open_model
    from cgr.retrieval.encoders import load_sentence_encoder

    home = tmp_path / "run"
    home.mkdir()
    load_sentence_encoder("minilm").save(str(home / "ranker"), safe_serialization=True)
    checkpoint = torch.load(tiny_run / "ckpt" / "best.ckpt", map_location="cpu", weights_only=True)
    checkpoint["datamodule_hyper_parameters"]["chains"]["rank_encoder"] = str(home / "ranker")
    torch.save(checkpoint, home / "best.ckpt")
    out = tmp_path / "model"
    export_model(home / "best.ckpt", out, data_roots=[ROOT, tmp_path])
    shutil.rmtree(home / "ranker")  # the folder must not need the original
    config = json.loads((out / "cgr_config.json").read_text())
    assert config["data"]["chains"]["rank_encoder"] == "chain_ranker"
    assert (out / "chain_ranker" / "model.safetensors").is_file()
    assert "`chain_ranker/`" in (out / "README.md").read_text()
    assert open_model(out).data["chains"]["rank_encoder"] == str(out / "chain_ranker")
    p = cgr.Predictor.from_pretrained(out).predict(
        "Which energy source is renewable?", ["coal", "a solar panel"]
    )
    assert p.answer in {"A", "B"}
