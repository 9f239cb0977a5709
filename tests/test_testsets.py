"""`simul streams text --testset`: sacrebleu's dataset API against a cache folder the test fills itself.

sacrebleu keeps WMT22 as ``$SACREBLEU/wmt22/raw/wmt22.v1.1.tar.gz`` (the download, named
``<name>.<basename of the URL>``) and what it unpacks to, ``raw/wmt22-news-systems-1.1/xml/
wmttest2022.<pair>.all.xml``; it downloads only when the archive is missing or empty. The test writes a small
XML file in the WMT22 format (documents with a source and references A and B) and the archive holding it,
exactly where sacrebleu looks, and runs the command in a child process with ``SACREBLEU`` set (sacrebleu
reads the variable when it is imported). Downloads are sent to a closed local port, so the empty-cache case
is offline whatever the machine's network.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

sacrebleu = pytest.importorskip("sacrebleu")

XML_PATH = "wmt22-news-systems-1.1/xml/wmttest2022.en-de.all.xml"
DOCS = [
    (
        "doc-1",
        ["The cat sat on the mat and looked out of the window.", "It was raining."],
        ["Die Katze saß auf der Matte und sah aus dem Fenster.", "Es regnete."],
        ["Die Katze saß auf der Matte und schaute zum Fenster hinaus.", "Es hat geregnet."],
    ),
    (
        "doc-2",
        ["We now have four new trains."],
        ["Wir haben jetzt vier neue Züge."],
        ["Nun gibt es vier neue Züge."],
    ),
]


def _segs(sentences: list[str]) -> str:
    return "".join(f'<seg id="{i}">{s}</seg>' for i, s in enumerate(sentences, start=1))


def wmt22_xml() -> bytes:
    docs = []
    for doc_id, src, ref_a, ref_b in DOCS:
        docs.append(
            f'<doc id="{doc_id}" origlang="en"><src lang="en"><p>{_segs(src)}</p></src>'
            # B before A, as files may list them: simul orders references by translator
            f'<ref lang="de" translator="B"><p>{_segs(ref_b)}</p></ref>'
            f'<ref lang="de" translator="A"><p>{_segs(ref_a)}</p></ref>'
            f'<hyp lang="de" system="sys1"><p>{_segs(ref_a)}</p></hyp></doc>'
        )
    body = "".join(docs)
    head = '<?xml version="1.0" encoding="utf-8"?><dataset id="wmttest2022"><collection id="general">'
    return f"{head}{body}</collection></dataset>".encode()


def fill_cache(cache: Path) -> None:
    raw = cache / "wmt22" / "raw"
    xml = raw / XML_PATH
    xml.parent.mkdir(parents=True)
    xml.write_bytes(wmt22_xml())
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        data = wmt22_xml()
        info = tarfile.TarInfo(XML_PATH)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (raw / "wmt22.v1.1.tar.gz").write_bytes(archive.getvalue())


def run_text(cache: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SACREBLEU": str(cache),
        "https_proxy": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "no_proxy": "",
        "NO_PROXY": "",
    }
    command = [sys.executable, "-m", "simul", "streams", "text", "--testset", "wmt22", "--langpair", "en-de"]
    return subprocess.run(
        [*command, "-o", str(out), *extra], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_testset_from_a_filled_cache(tmp_path: Path) -> None:
    cache = tmp_path / "sacrebleu"
    fill_cache(cache)
    out = tmp_path / "wmt22.jsonl"
    done = run_text(cache, out, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["references_per_stream"] == 2
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ["wmt22-1", "wmt22-2", "wmt22-3"]
    assert records[0]["references"] == [DOCS[0][2][0], DOCS[0][3][0]]  # A first, then B
    assert records[2]["references"] == [DOCS[1][2][0], DOCS[1][3][0]]
    assert records[1]["steps"] == [{"final": True, "source": "It was raining."}]
    prov = records[0]["provenance"]
    assert prov["testset"] == "wmt22" and prov["langpair"] == "en-de"
    assert prov["sacrebleu"] == sacrebleu.__version__ and prov["references"] == ["A", "B"]
    assert prov["source_file"] == "wmt22.en-de.src"
    assert prov["reference_files"] == ["wmt22.en-de.ref-A", "wmt22.en-de.ref-B"]
    assert (cache / "wmt22" / "wmt22.en-de.src").is_file()  # sacrebleu wrote its text files
    # what run.json records under config.streams.testsets
    from simul.streams.format import read_streams
    from simul.streams.references import testset_summary

    assert testset_summary(read_streams(out)) == [
        {"name": "wmt22", "langpair": "en-de", "sacrebleu": sacrebleu.__version__, "references": ["A", "B"]}
    ]


def test_empty_cache_offline_names_the_folder(tmp_path: Path) -> None:
    cache = tmp_path / "empty-cache"
    cache.mkdir()
    out = tmp_path / "wmt22.jsonl"
    done = run_text(cache, out)
    assert done.returncode == 1
    message = " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr
    assert f"not in sacrebleu's cache folder {cache / 'wmt22'}" in message
    assert "could not be downloaded" in message and "SACREBLEU" in message
    assert not out.exists()


def test_unknown_testset_and_langpair(tmp_path: Path) -> None:
    from simul.common.errors import SimulError
    from simul.streams.testsets import testset_lines

    with pytest.raises(SimulError, match="no test set 'wmt222'; did you mean wmt22"):
        testset_lines("wmt222", "en-de")
    with pytest.raises(SimulError, match=r"wmt22 has no language pair 'en-xx'; it has .*en-de"):
        testset_lines("wmt22", "en-xx")
