"""Write three WMT-style line-aligned test sets (not FLORES) from the ACL 60/60 dev set, as users get them.

    python tools/text_testsets.py --acl-dir ACL6060_DIR --out DIR

ACL 60/60 dev (Salesky et al., IWSLT 2023; CC-BY 4.0 per its release) holds 468 English segments of five
ACL talks with German, Chinese and Japanese references, line-aligned
(``dev/ACL.6060.dev.en-xx.<lang>.segments.txt`` and ``dev/ACL.6060.dev.talkids.txt``). Written into DIR,
named like WMT's plain-text releases:

* ``acl6060dev.en-de.src.en``, ``acl6060dev.en-de.ref.refA.de``, ``acl6060dev.en-de.ref.refB.de``: segments
  1-40 (talk 2022.acl-long.110) with two references: A is ACL 60/60's German reference, B a second,
  independent German translation of the same 40 segments written for simul's tests
  (``tools/data/acl6060-dev-1-40.de.refB.txt``, same license as simul).
* ``acl6060dev.en-zh.src.en``, ``acl6060dev.en-zh.ref.zh``: the 105 segments of talk 2022.acl-long.117 with
  ACL 60/60's Chinese reference.
* ``acl6060dev-para.en-de.src.en``, ``acl6060dev-para.en-de.ref.de``: paragraph-level, like WMT23's en-de:
  consecutive segments of a talk joined by a space, two per paragraph (a talk's last paragraph may be
  shorter), over all five talks; ``acl6060dev-para.en-de.docid`` names each paragraph's talk.
"""

from __future__ import annotations

import argparse
from pathlib import Path

REF_B = Path(__file__).parent / "data" / "acl6060-dev-1-40.de.refB.txt"
PARAGRAPH = 2


def read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--acl-dir", type=Path, required=True, help="ACL 60/60 folder holding dev/")
    parser.add_argument("--out", type=Path, required=True, help="folder to write the test sets into")
    args = parser.parse_args()
    dev = args.acl_dir / "dev"
    en, de, zh = (read(dev / f"ACL.6060.dev.en-xx.{lang}.segments.txt") for lang in ("en", "de", "zh"))
    talks = read(dev / "ACL.6060.dev.talkids.txt")
    assert len(en) == len(de) == len(zh) == len(talks), "the ACL 60/60 files are not line-aligned"
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    ref_b = read(REF_B)
    write(out / "acl6060dev.en-de.src.en", en[: len(ref_b)])
    write(out / "acl6060dev.en-de.ref.refA.de", de[: len(ref_b)])
    write(out / "acl6060dev.en-de.ref.refB.de", ref_b)

    chosen = [i for i, talk in enumerate(talks) if talk == "2022.acl-long.117"]
    write(out / "acl6060dev.en-zh.src.en", [en[i] for i in chosen])
    write(out / "acl6060dev.en-zh.ref.zh", [zh[i] for i in chosen])

    paragraphs: list[tuple[str, str, str]] = []
    start = 0
    while start < len(en):
        end = start
        while end < len(en) and end - start < PARAGRAPH and talks[end] == talks[start]:
            end += 1
        paragraphs.append((" ".join(en[start:end]), " ".join(de[start:end]), talks[start]))
        start = end
    write(out / "acl6060dev-para.en-de.src.en", [p[0] for p in paragraphs])
    write(out / "acl6060dev-para.en-de.ref.de", [p[1] for p in paragraphs])
    write(out / "acl6060dev-para.en-de.docid", [p[2] for p in paragraphs])
    print(
        f"wrote 3 test sets to {out}: en-de 2 refs ({len(ref_b)}), en-zh ({len(chosen)}), "
        f"paragraphs ({len(paragraphs)})"
    )


if __name__ == "__main__":
    main()
