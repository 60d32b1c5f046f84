import penman

from cgr.cli import main
from tests.conftest import ROOT

GOLD = """# ::id t.1 ::date x
# ::snt A whale is a mammal.
(m / mammal
   :domain (w / whale))

# ::id t.2
# ::snt The girl sees a cat.
(s / see-01
   :ARG0 (g / girl)
   :ARG1 (c / cat))
"""


def test_amr_parse_writes_one_graph_per_line(tmp_path, capsys):
    (tmp_path / "s.txt").write_text("A whale is a mammal.\n...\nThe girl sees a cat.\n")
    args = ["amr", "parse", "--backend", "embedded", "--in", str(tmp_path / "s.txt"), "--out", str(tmp_path / "g.amr"),
            "--cache", str(tmp_path / "c.sqlite")]  # fmt: skip
    assert main(args) == 0
    graphs = penman.loads((tmp_path / "g.amr").read_text())
    assert [g.metadata["snt"] for g in graphs] == [
        "A whale is a mammal.",
        "...",
        "The girl sees a cat.",
    ]
    assert "1 failed" in capsys.readouterr().out


def test_amr_smatch_prints_f1_last(tmp_path, capsys):
    (tmp_path / "gold.amr").write_text(GOLD)
    assert (
        main(
            [
                "amr",
                "smatch",
                "--gold",
                str(tmp_path / "gold.amr"),
                "--cache",
                str(tmp_path / "c.sqlite"),
            ]
        )
        == 0
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "smatch_f1: 1.0000"  # both graphs are shapes the embedded parser gets exactly


def test_little_prince_smatch_is_measured(tmp_path, capsys):
    gold = ROOT.parent / "shared" / "data" / "amr" / "amr-bank-struct-v3.0.txt"
    sample = tmp_path / "gold.amr"
    if gold.exists():  # the real bank when ../shared is there; our two graphs otherwise
        sample.write_text("\n\n".join(gold.read_text().split("\n\n")[:40]))
    else:
        sample.write_text(GOLD)
    assert (
        main(["amr", "smatch", "--gold", str(sample), "--cache", str(tmp_path / "c.sqlite")]) == 0
    )
    f1 = float(capsys.readouterr().out.strip().splitlines()[-1].split()[1])
    assert 0.3 < f1 <= 1.0
