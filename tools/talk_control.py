"""A control talk for the cost-per-update measurement: the first N segments of a long-form talk, K times.

Every quarter of the result (with K = 4) has the same content at a later position in the talk, so its cost
per update by quarter (metrics.talk_cost) shows what the position alone costs (docs/results.md, "Whole
talks"). The talk's transcript must be its segments' sources joined (simulated ACL 60/60 talks).

    python tools/talk_control.py TALKS.jsonl TALK_ID N K OUT.jsonl
"""

from __future__ import annotations

import sys
from pathlib import Path

from simul.common.errors import SimulError
from simul.streams.format import Segment, Step, Stream, read_streams, write_streams


def repeated(talk: Stream, segments: int, times: int) -> Stream:
    chosen = talk.segments[:segments]
    if not chosen or any(s.source is None or s.offset_ms is None or s.duration_ms is None for s in chosen):
        raise SimulError(f"talk {talk.id}: its first segments need sources and times")
    text = " ".join(s.source or "" for s in chosen)
    words = len(text.split())
    last = chosen[-1]
    end = (last.offset_ms or 0.0) + (last.duration_ms or 0.0)
    early = [s for s in talk.steps if len(s.source.split()) < words]
    steps: list[Step] = []
    out_segments: list[Segment] = []
    for r in range(times):
        base = (text + " ") * r
        shift = r * end
        steps += [Step((base + s.source).strip(), False, (s.time_ms or 0.0) + shift) for s in early]
        steps.append(Step((base + text).strip(), r == times - 1, (r + 1) * end))
        out_segments += [
            Segment(s.references, s.source, (s.offset_ms or 0.0) + shift, s.duration_ms) for s in chosen
        ]
    return Stream.talk(
        f"{talk.id}-first{segments}x{times}",
        talk.src,
        talk.tgt,
        tuple(steps),
        tuple(out_segments),
        times * end,
        {"from": talk.id, "segments": segments, "times": times, "tool": "tools/talk_control.py"},
    )


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    source, talk_id, n, k, out = argv
    talks = {t.id: t for t in read_streams(Path(source))}
    if talk_id not in talks:
        raise SystemExit(f"{source} has no talk {talk_id!r}; it has {', '.join(talks)}")
    write_streams(Path(out), [repeated(talks[talk_id], int(n), int(k))])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
