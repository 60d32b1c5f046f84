import shutil

import penman
import pytest

from cgr.amr.amrlib_backend import AmrlibParser
from cgr.errors import ConfigError
from tests.amr.tiny_amrlib_model import GRAPHS, build

pytestmark = pytest.mark.slow  # real training / model loading; `-m "not slow"` skips


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    built = build(tmp_path_factory.mktemp("amrlib") / "model_stog_tiny")
    moved = built.parent / "moved_elsewhere"  # the folder still loads after a move
    shutil.move(built, moved)
    return moved


def triples(graph: str) -> set:
    g = penman.decode(graph)
    names = {v: c for v, _, c in g.instances()}
    return {(names.get(s, s), r, names.get(t, t)) for s, r, t in g.triples}


def test_amrlib_loads_the_model_dir_and_parses(model_dir):
    parser = AmrlibParser(str(model_dir), batch_size=2)
    sentences = list(GRAPHS)
    graphs = parser.parse(sentences)
    assert all(g is not None for g in graphs)
    for sentence, graph in zip(sentences, graphs, strict=True):
        assert penman.decode(graph).metadata["snt"] == sentence
        assert triples(graph) == triples(GRAPHS[sentence])


def test_unparsable_output_becomes_none_not_a_crash(model_dir):
    graphs = AmrlibParser(str(model_dir)).parse(["zebra zebra zebra", "the girl sees a cat ."])
    assert len(graphs) == 2 and graphs[1] is not None
    assert graphs[0] is None or penman.decode(graphs[0])


def test_folder_without_meta_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="amrlib_meta.json"):
        AmrlibParser(str(tmp_path))
