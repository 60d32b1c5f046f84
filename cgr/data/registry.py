"""The public datasets cgr reads: where each comes from (the publisher's own release), the files
cgr reads from it under the data root, and their sha256 (sha256sums.txt beside this file).

A file is *official* when its sha256 is known to equal the publisher's file, *unverified*
when no such checksum is known (`cgr data get` then prints the sha256 it got, and whether it
equals the copy cgr is tested on), *derived* when cgr writes it from other files of the
dataset (cgr.datasets.derived). No checksum here is invented: each one was computed from a
file whose provenance sha256sums.txt states."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

SUMS = Path(__file__).with_name("sha256sums.txt")


# bounds where the registry states no size: a download, and a file read out of an archive
MAX_DOWNLOAD = 32 << 30
MAX_FILE = 8 << 30


@dataclass(frozen=True)
class Source:
    """One download: an archive (zip, tar.gz, tgz) or a single file."""

    url: str
    note: str = ""  # what the user should know (its size, a manual step)
    file_name: str = ""  # where the URL does not end with it

    @property
    def name(self) -> str:
        return self.file_name or self.url.split("?")[0].rstrip("/").rsplit("/", 1)[-1]

    @property
    def archive(self) -> bool:
        return self.name.endswith((".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tar"))

    @property
    def max_bytes(self) -> int:
        """The most a download of it may send: 1.5x the size its note states ("about 680 MB")
        and 16 MiB more, else MAX_DOWNLOAD; a mirror that sends more is cut off there."""
        found = re.search(r"about ([0-9.]+) ([KMG])B", self.note)
        if not found:
            return MAX_DOWNLOAD
        size = float(found.group(1)) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[found.group(2)]
        return int(1.5 * size) + (16 << 20)


@dataclass(frozen=True)
class DataFile:
    path: str  # under the data root, cgr's layout
    member: str = ""  # its name in the source (an archive member or a file), matched by its tail
    source: int = 0  # index into the dataset's sources
    derived: str = ""  # the producer that writes it (cgr.datasets.derived), from files before it
    split: str = ""  # train / dev / test / corpus / other

    @property
    def tail(self) -> str:
        return self.member or self.path.split("/", 1)[-1]


@dataclass(frozen=True)
class Dataset:
    name: str
    title: str
    license: str
    citation: str
    homepage: str
    sources: tuple[Source, ...]
    files: tuple[DataFile, ...]
    used_by: str
    notes: str = ""
    extra_files: tuple[str, ...] = field(default=())  # release files kept beside (not checked)


@dataclass(frozen=True)
class Checksum:
    sha256: str
    size: int
    status: str  # official | variant | reference | derived


@cache
def checksums() -> dict[str, list[Checksum]]:
    found: dict[str, list[Checksum]] = {}
    for line in SUMS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            sha, size, status, path = line.split(maxsplit=3)
            found.setdefault(path, []).append(Checksum(sha, int(size), status))
    return found


def official(path: str) -> Checksum | None:
    """The publisher's checksum a file must have, where one is known."""
    return next((c for c in checksums().get(path, []) if c.status == "official"), None)


def known(path: str) -> list[Checksum]:
    return checksums().get(path, [])


def max_file_bytes(path: str) -> int:
    """The most a release may hold for `path`: the largest size the checksums know for it (a
    decompression bomb, or a member padded past it, is cut there), else MAX_FILE."""
    sizes = [c.size for c in known(path)]
    return max(sizes) if sizes else MAX_FILE


AI2 = "https://ai2-public-datasets.s3.amazonaws.com"
OBQA_SPLITS = ("train", "dev", "test")
ARC_SPLITS = ("Train", "Dev", "Test")
WORLDTREE_TABLES = (
    "ACTION AFFECT AFFORDANCES ATTRIBUTE-VALUE-RANGE CAUSE CHANGE CHANGE-VEC "
    "CHEM-PERIODIC-TAB-FAM CHEM-PERIODIC-TAB-LOC COMPARISON CONSUMERS-EATING CONTAINS "
    "CONVERSIONS COUPLEDRELATIONSHIP DURATIONS DURING EXAMPLES FORMEDBY FREQUENCY HABITAT "
    "HISTORY IFTHEN INSTANCES KINDOF LIFESPAN LOCATIONS MADEOF MEASUREMENTS NAMES OPPOSITES "
    "PARTOF PERCEPTIONS PREDATOR-PREY PROCESSROLES PROCESSSTAGES PROCESSSTAGES-ORDERS "
    "PROP-ANIMAL-ATTRIB PROP-ANIMAL-MAT-IM PROP-ANIMAL-REPROD PROP-AVG-WEIGHT PROP-CHEM-ACIDITY "
    "PROP-CHEM-CHARGE PROP-CHEM-ELEMSYMB PROP-CHEM-REACT PROP-CONDUCTIVITY "
    "PROP-COUNTRY-HEMISPHERE PROP-DOMRECESS-TRAIT PROP-ENVIRONMENTATTRIB PROP-FLEX-RIGIDITY "
    "PROP-GENERIC PROP-HARDNESS PROP-INHERITEDLEARNED PROP-INTENSIVE-EXTENSIVE PROP-MAGNETISM "
    "PROP-MAT-DURABILITY PROP-MAT-OPACITY PROP-MAT-PURITY-MIXTURE PROP-ORBITAL-ROT "
    "PROP-QUANTITY-DATE PROP-RECYCLABLE PROP-REL-DIST PROP-RESOURCES-RENEWABLE PROP-SOLUBILITY "
    "PROP-SOLUTION PROP-STATESOFMATTER-SHAPEVOL PROP-STATESOFMATTER-TEMPS PROP-THINGS "
    "PROP-WARM-COLD-BLOODED REQUIRES SEQ-SPATIAL SOURCEOF STAGE-IN-PROCESS SUBDIVISION-COUNTRY "
    "SUBDIVISION-GENERICSPATIAL SYNONYMY TRANSFER UNIT USEDFOR VEHICLE WAVES XIVORE"
).split()
WT = "corpus/worldtree_v2.1"
EB = "corpus/entailmentbank"
# the allenai/entailment_bank commit whose files these checksums were taken from
EB_RAW = ("https://raw.githubusercontent.com/allenai/entailment_bank/"
          "ada61c597d714665761f17e4b278023f4a9f4e5f/data/public_dataset/"
          "entailment_trees_emnlp2021_data_v2")  # fmt: skip
HOTPOT = "http://curtis.ml.cmu.edu/datasets/hotpot"

DATASETS: tuple[Dataset, ...] = (
    Dataset(
        name="openbookqa",
        title="OpenBookQA (Main and Additional: questions, the open book, crowdsourced facts)",
        license="Apache-2.0",
        citation="Mihaylov et al., Can a Suit of Armor Conduct Electricity? EMNLP 2018",
        homepage="https://allenai.org/data/open-book-qa",
        sources=(Source(f"{AI2}/open-book-qa/OpenBookQA-V1-Sep2018.zip", "about 1.5 MB"),),
        files=(
            *(DataFile(f"openbookqa/Main/{s}.jsonl", split=s) for s in OBQA_SPLITS),
            DataFile("openbookqa/Main/openbook.txt", split="corpus"),
            *(DataFile(f"openbookqa/Additional/{s}_complete.jsonl", split=s) for s in OBQA_SPLITS),
            DataFile("openbookqa/Additional/crowdsourced-facts.txt", split="corpus"),
        ),
        used_by="configs/obqa*.yaml (train, dev, open book), the science corpus",
    ),
    Dataset(
        name="arc",
        title="ARC, the AI2 Reasoning Challenge (Challenge and Easy; with retrieved sentences)",
        license="CC BY-SA 4.0",
        citation="Clark et al., Think you have Solved Question Answering? Try ARC, 2018",
        homepage="https://allenai.org/data/arc",
        sources=(
            Source(
                f"{AI2}/arc/ARC-V1-Feb2018.zip",
                "about 680 MB: the archive also holds the 14M-sentence ARC Corpus",
            ),
            # AI2's retrieved ARC-Corpus sentences per choice (IR10V2), from UnifiedQA's files
            Source(
                "https://github.com/allenai/unifiedqa/raw/master/files/arc-with-ir/"
                "ARC-OBQA-RegLivEnv-IR10V2.zip"
            ),
        ),  # fmt: skip
        files=(
            *(
                DataFile(f"arc/ARC-{part}/ARC-{part}-{s}.jsonl", split=s.lower())
                for part in ("Challenge", "Easy")
                for s in ARC_SPLITS
            ),
            *(
                DataFile(
                    f"arc/ir_context/arc_{part}_{s}_with_ir_para.jsonl",
                    source=1,
                    derived="arc_ir_split",
                    split=s,
                )
                for part in ("challenge", "easy")
                for s in ("train", "dev", "test")
            ),
            DataFile(
                "corpus/arc_ir_sentences.txt", source=1, derived="arc_ir_sentences", split="corpus"
            ),
        ),  # fmt: skip
        used_by="configs/arc_challenge*.yaml; the science corpus of configs/retrieval/*.yaml "
        "(corpus/arc_ir_sentences.txt: the ARC-Corpus sentences retrieved for each choice)",
        notes="the IR10V2 archive holds the questions of ARC, OBQA and RegLivEnv in one file per "
        "split; cgr keeps those of ARC (id prefixes ARCCH_, ARCEZ_) as arc/ir_context/*.jsonl",
    ),
    Dataset(
        name="worldtree",
        title="WorldTree V2.1 tablestore and explanations (the TextGraphs-2021 release)",
        license="CC BY-SA 4.0 (tablestore and explanations)",
        citation="Xie et al., WorldTree V2, LREC 2020; Thayaparan et al., TextGraphs-15 shared "
        "task, 2021",
        homepage="http://cognitiveai.org/explanationbank/",
        sources=(Source("http://cognitiveai.org/dist/tg2021-alldata-practice.zip"),),
        files=(
            *(
                DataFile(f"{WT}/tables/{t}.tsv", member=f"tables/{t}.tsv", split="corpus")
                for t in WORLDTREE_TABLES
            ),  # fmt: skip
            *(
                DataFile(f"{WT}/{name}", member=name, split="other")
                for name in (
                    "tableindex.txt",
                    "README-Worldtree-V2.txt",
                    "WorldTree-V2.1-TableKnowledgeTypes.tsv",
                )
            ),  # fmt: skip
            DataFile(f"{WT}/worldtree_v2.1_facts.jsonl", derived="worldtree_facts", split="corpus"),
            DataFile(
                f"{WT}/explanations.train.tsv", derived="worldtree_explanations", split="train"
            ),
            DataFile(f"{WT}/explanations.dev.tsv", derived="worldtree_explanations", split="dev"),
        ),
        used_by="configs/chains/worldtree.yaml, the gold facts of configs/arc_challenge*.yaml, "
        "the science corpus",
        notes="the release's questions/questions.*.tsv hold AI2's question texts under their own "
        "terms; cgr keeps only ids, answer keys and explanations from them (explanations.*.tsv)",
    ),
    Dataset(
        name="entailmentbank",
        title="EntailmentBank (task 1 trees and its WorldTree-extended sentence corpus)",
        license="CC BY 4.0",
        citation="Dalvi et al., Explaining Answers with Entailment Trees, EMNLP 2021",
        homepage="https://allenai.org/data/entailmentbank",
        sources=(
            Source(f"{EB_RAW}/supporting_data/worldtree_corpus_sentences_extended.json"),
            Source(f"{EB_RAW}/dataset/task_1/train.jsonl"),
            Source(f"{EB_RAW}/dataset/task_1/dev.jsonl"),
            Source(f"{EB_RAW}/dataset/task_1/test.jsonl"),
        ),
        files=(
            DataFile(
                f"{EB}/worldtree_corpus_sentences_extended.json",
                member="worldtree_corpus_sentences_extended.json",
                split="corpus",
            ),  # fmt: skip
            DataFile(
                f"{EB}/task_1_train.jsonl", member="task_1/train.jsonl", source=1, split="train"
            ),  # fmt: skip
            DataFile(f"{EB}/task_1_dev.jsonl", member="task_1/dev.jsonl", source=2, split="dev"),
            DataFile(f"{EB}/task_1_test.jsonl", member="task_1/test.jsonl", source=3, split="test"),
        ),
        used_by="the science corpus; benchmarks/chains.py (gold trees)",
    ),
    Dataset(
        name="hotpotqa",
        title="HotpotQA (official train, dev distractor and dev full-wiki json)",
        license="CC BY-SA 4.0",
        citation="Yang et al., HotpotQA, EMNLP 2018",
        homepage="https://hotpotqa.github.io/",
        sources=(
            Source(f"{HOTPOT}/hotpot_train_v1.1.json", "about 570 MB"),
            Source(f"{HOTPOT}/hotpot_dev_distractor_v1.json", "about 45 MB"),
            Source(f"{HOTPOT}/hotpot_dev_fullwiki_v1.json", "about 46 MB"),
        ),
        files=(
            DataFile("hotpotqa/hotpot_train_v1.1.json", split="train"),
            DataFile("hotpotqa/hotpot_dev_distractor_v1.json", source=1, split="dev"),
            DataFile("hotpotqa/hotpot_dev_fullwiki_v1.json", source=2, split="dev"),
        ),
        used_by="cgr ircot / riches --data (configs/ircot_hotpotqa.yaml, riches_hotpotqa.yaml)",
    ),
    Dataset(
        name="2wikimultihopqa",
        title="2WikiMultihopQA (train, dev, test)",
        license="Apache-2.0",
        citation="Ho et al., Constructing A Multi-hop QA Dataset, COLING 2020",
        homepage="https://github.com/Alab-NII/2wikimultihop",
        sources=(Source("https://www.dropbox.com/s/ms2m13252h6xubs/data_ids_april7.zip?dl=1"),),
        files=tuple(DataFile(f"2wikimultihopqa/{s}.json", split=s) for s in OBQA_SPLITS),
        used_by="cgr ircot --data",
    ),
    Dataset(
        name="musique",
        title="MuSiQue-Ans v1.0 (train, dev, test)",
        license="CC BY 4.0",
        citation="Trivedi et al., MuSiQue: Multihop Questions via Single-hop Question "
        "Composition, TACL 2022",
        homepage="https://github.com/StonyBrookNLP/musique",
        sources=(
            Source(
                "https://drive.google.com/uc?export=download&id=1tGdADlNjWFaHLeZZGShh2IRcpO6Lv24h",
                "musique_v1.0.zip on Google Drive (the authors' download_data.sh); where Drive "
                "asks to confirm, fetch it in a browser and pass it with --from",
                file_name="musique_v1.0.zip",
            ),
        ),
        files=tuple(DataFile(f"musique/musique_ans_v1.0_{s}.jsonl", split=s) for s in OBQA_SPLITS),
        used_by="cgr ircot --data",
    ),
    Dataset(
        name="qasper",
        title="QASPER v0.3 (train and dev; test with the official evaluator)",
        license="CC BY 4.0",
        citation="Dasigi et al., A Dataset of Information-Seeking Questions and Answers Anchored "
        "in Research Papers, NAACL 2021",
        homepage="https://allenai.org/data/qasper",
        sources=(
            Source("https://qasper-dataset.s3.us-west-2.amazonaws.com/qasper-train-dev-v0.3.tgz"),
            Source(
                "https://qasper-dataset.s3.us-west-2.amazonaws.com/"
                "qasper-test-and-evaluator-v0.3.tgz"
            ),  # fmt: skip
        ),
        files=(
            DataFile("qasper/qasper-train-v0.3.json", split="train"),
            DataFile("qasper/qasper-dev-v0.3.json", split="dev"),
            DataFile("qasper/qasper-test-v0.3.json", source=1, split="test"),
        ),
        used_by="cgr longdoc --data (configs/d3_qasper.yaml)",
    ),
    Dataset(
        name="amr",
        title="The Little Prince AMR bank v3.0 (gold AMR graphs, PENMAN)",
        license="free from ISI (amr.isi.edu); check its terms before redistributing",
        citation="Banarescu et al., Abstract Meaning Representation for Sembanking, 2013",
        homepage="https://amr.isi.edu/download.html",
        sources=(Source("https://amr.isi.edu/download/amr-bank-struct-v3.0.txt"),),
        files=(
            DataFile(
                "amr/amr-bank-struct-v3.0.txt", member="amr-bank-struct-v3.0.txt", split="other"
            ),
        ),  # fmt: skip
        used_by="cgr amr smatch --gold (the parser's Smatch)",
    ),
)
BY_NAME = {d.name: d for d in DATASETS}


def dataset_of(path: str) -> str | None:
    """The dataset whose files include `path` (relative to the data root)."""
    return next((d.name for d in DATASETS if any(f.path == path for f in d.files)), None)


def data_file(path: str) -> DataFile | None:
    name = dataset_of(path)
    return next(f for f in BY_NAME[name].files if f.path == path) if name else None
