import multiprocessing
import sqlite3

from cgr.amr.cache import ParseCache


class Counting:
    def __init__(self):
        self.seen = []

    def __call__(self, sentences):
        self.seen.extend(sentences)
        return [None if s == "bad" else f"(x / {s.split()[0]})" for s in sentences]


def test_parses_only_what_is_missing_and_keeps_order(tmp_path):
    cache, parse = ParseCache(tmp_path / "amr.sqlite"), Counting()
    assert cache.parse("b", ["cat a", "dog b"], parse, progress=False) == ["(x / cat)", "(x / dog)"]
    out = cache.parse("b", ["dog b", "eel c", "cat a", "eel c"], parse, progress=False)
    assert out == ["(x / dog)", "(x / eel)", "(x / cat)", "(x / eel)"]
    assert parse.seen == ["cat a", "dog b", "eel c"]


def test_backends_do_not_share_entries_and_failures_are_not_retried(tmp_path):
    cache, parse = ParseCache(tmp_path / "amr.sqlite"), Counting()
    assert cache.parse("one", ["bad", "cat"], parse, progress=False) == [None, "(x / cat)"]
    assert cache.parse("one", ["bad"], parse, progress=False) == [None]
    cache.parse("two", ["cat"], parse, progress=False)
    assert parse.seen == ["bad", "cat", "cat"]


def test_killed_run_resumes_from_committed_batches(tmp_path):
    path = tmp_path / "amr.sqlite"

    def dies_on_second_batch(sentences):
        if "s3" in sentences:
            raise KeyboardInterrupt  # stands for a kill in the middle of a corpus
        return [f"(x / {s})" for s in sentences]

    try:
        ParseCache(path).parse(
            "b", ["s1", "s2", "s3", "s4"], dies_on_second_batch, batch_size=2, progress=False
        )
    except KeyboardInterrupt:
        pass
    parse = Counting()
    out = ParseCache(path).parse("b", ["s1", "s2", "s3", "s4"], parse, batch_size=2, progress=False)
    assert parse.seen == ["s3", "s4"] and out[:2] == ["(x / s1)", "(x / s2)"]


def test_a_second_process_reads_while_the_first_holds_the_cache(tmp_path):
    path = tmp_path / "amr.sqlite"
    writer = ParseCache(path)
    writer.parse("b", ["cat"], Counting(), progress=False)
    reader = sqlite3.connect(path)
    assert reader.execute("SELECT graph FROM parses").fetchall() == [("(x / cat)",)]
    assert ParseCache(path).get_many("b", ["cat"]) == {"cat": "(x / cat)"}


def _open_and_store(path, barrier, results, name):
    try:
        barrier.wait()
        ParseCache(path).put_many("b", {name: "(x / y)"})
        results.put("ok")
    except Exception as error:  # reported to the parent, which names it
        results.put(repr(error))


def test_processes_opening_a_fresh_cache_together_all_succeed(tmp_path):
    # DDP ranks open the cache at the same moment; unserialised, about one such start in
    # thirteen failed with "database is locked" (sqlite does not wait when switching to WAL).
    context = multiprocessing.get_context("fork")
    for trial in range(80):
        path = tmp_path / f"amr{trial}.sqlite"
        barrier, results = context.Barrier(4), context.Queue()
        workers = [
            context.Process(target=_open_and_store, args=(path, barrier, results, f"s{rank}"))
            for rank in range(4)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert sorted(results.get() for _ in workers) == ["ok"] * 4, f"trial {trial}"
        stored = sqlite3.connect(path).execute("SELECT COUNT(*) FROM parses").fetchone()[0]
        assert stored == 4


def test_parsing_in_worker_processes_equals_one_process(tmp_path):
    """The embedded parser over several processes stores the same graphs as one process."""
    from cgr.amr.parsers import AMRConfig, CachedParser
    from tests.conftest import ROOT

    facts = (ROOT / "data" / "quickstart" / "facts.txt").read_text().splitlines()[:40]
    serial = CachedParser(AMRConfig(cache=str(tmp_path / "one.sqlite"), batch_size=8), False)
    parallel = CachedParser(
        AMRConfig(cache=str(tmp_path / "many.sqlite"), batch_size=8), False, workers=2
    )
    one = serial.parse(facts)
    assert parallel.parse(facts) == one
    assert sum(g is not None for g in one) >= 35
    # the second call reads the cache: nothing left for the workers
    assert parallel.parse(facts[:5]) == one[:5]


def test_a_garbled_cache_file_is_set_aside_and_parsing_starts_anew(tmp_path, caplog):
    path = tmp_path / "amr.sqlite"
    path.write_bytes(b"this is not an sqlite database" * 100)
    cache, parse = ParseCache(path), Counting()
    assert cache.parse("b", ["cat a"], parse, progress=False) == ["(x / cat)"]
    assert (tmp_path / "amr.sqlite.damaged-1").read_bytes().startswith(b"this is not")
    assert "set aside as amr.sqlite.damaged-1" in caplog.text
