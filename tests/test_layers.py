"""The package's layers (docs/development.md): no import cycle between cgr's parts, and every
import, at module level or inside a function, points to the same layer or one below it."""

import ast
from collections import defaultdict
from pathlib import Path

from tests.conftest import ROOT

# lowest first; a part may import its own layer and those before it
LAYERS = [
    {"errors", "validation", "files", "config_files", "config_help", "models", "nlp", "workers", "terminal",
     "signing", "runs", "fitting"},
    {"data"},
    {"datasets"},  # getting the public datasets into the data root (cgr data)
    {"weights"},  # judging and loading model weights: every load goes through it
    {"retrieval", "amr", "generation"},
    {"chains", "reader"},
    {"evidence"},
    {"training"},
    {"pretrained"},  # opening a trained model: checkpoint or folder, checked, then loaded
    {"evaluation"},
    {"ircot", "riches", "longdoc"},
    {"api", "serving"},
    {"cli"},
    {"__init__"},  # `import cgr` re-exports the public API
]  # fmt: skip
RANK = {part: i for i, layer in enumerate(LAYERS) for part in layer}


def part_of(module: str) -> str:
    """cgr.training.module -> training; cgr.files -> files; cgr -> __init__."""
    names = module.split(".")
    return names[1] if len(names) > 1 else "__init__"


def imports(package: Path = ROOT / "cgr") -> dict[str, set[tuple[str, str]]]:
    """part -> {(imported part, file:line)} for every import of another part of cgr."""
    found: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        source = part_of(module.removesuffix(".__init__"))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module] if node.module != "cgr" else [
                    f"cgr.{a.name}" for a in node.names]  # fmt: skip
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target == "cgr" or target.startswith("cgr."):
                    part = part_of(target)
                    if part != source:
                        found[source].add(
                            (part, f"{path.relative_to(package.parent)}:{node.lineno}")
                        )
    return found


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return trail[trail.index(nxt) :] + [nxt] if nxt in trail else [node, nxt]
            if nxt not in state and (found := visit(nxt, [*trail, nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def module_imports(package: Path = ROOT / "cgr") -> dict[str, set[str]]:
    """module -> the cgr modules it imports (`from cgr.a import b` names cgr.a.b where that is a
    module, else cgr.a), at module level or inside a function."""

    def name(path: Path) -> str:
        return ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(
            ".__init__"
        )

    known = {name(p) for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        module = name(path)
        edges = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known
                           else node.module for a in node.names]  # fmt: skip
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            edges.update(t for t in targets if t.split(".")[0] == "cgr" and t != module)
    return graph


def test_no_two_files_import_each_other_even_within_a_part():
    assert cycle(module_imports()) is None


def test_the_file_check_finds_a_planted_circle(tmp_path):
    import shutil

    copy = tmp_path / "cgr"
    shutil.copytree(ROOT / "cgr", copy)
    planted = copy / "evaluation" / "support.py"
    planted.write_text(planted.read_text() + "\nfrom cgr.evaluation.prediction import Prediction\n")
    assert cycle(module_imports(copy)) is not None


def test_every_part_has_a_layer():
    parts = {part_of(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"))
             for p in (ROOT / "cgr").rglob("*.py")}  # fmt: skip
    assert sorted(parts - set(RANK)) == []


def test_imports_point_down_and_never_in_a_circle():
    found = imports()
    upward = sorted(f"{where}: {source} imports {target}" for source, edges in found.items()
                    for target, where in edges if RANK[target] > RANK[source])  # fmt: skip
    assert upward == []
    assert cycle({s: {t for t, _ in edges} for s, edges in found.items()}) is None


def test_the_check_finds_a_planted_upward_import(tmp_path):
    """The check itself: a copy of cgr with training importing evaluation fails it."""
    import shutil

    copy = tmp_path / "cgr"
    shutil.copytree(ROOT / "cgr", copy)
    planted = copy / "training" / "losses.py"
    planted.write_text(planted.read_text() + "\nfrom cgr.evaluation.predict import evaluate\n")
    found = imports(copy)
    edges = {s: {t for t, _ in e} for s, e in found.items()}
    assert "evaluation" in edges["training"] and RANK["evaluation"] > RANK["training"]
    assert cycle(edges) is not None  # evaluation imports training: a circle
