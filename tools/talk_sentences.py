"""Cut long-form streams (whole talks) into short-form streams of their reference segments, with the same
arrival: segment i's steps are the words of segment i known at each update of the talk.

Used to compare long-form decoding with short-form decoding *on the same sentences at the same cadence*
(docs/results.md, "Whole talks"): a talk's transcript must be its segments' sources joined, as in simulated
ACL 60/60 talks (`simul streams acl6060 --longform`). Times are relative to the segment's offset (the
short-form convention of docs/streams.md).

    python tools/talk_sentences.py TALKS.jsonl SENTENCES.jsonl
"""

from __future__ import annotations

import sys
from pathlib import Path

from simul.common.errors import SimulError
from simul.streams.format import Step, Stream, read_streams, write_streams


def talk_sentences(talk: Stream) -> list[Stream]:
    if not talk.longform:
        raise SimulError(f"{talk.id} is not a long-form stream")
    words = talk.final_source.split()
    out: list[Stream] = []
    start = 0
    for number, segment in enumerate(talk.segments, start=1):
        if segment.source is None:
            raise SimulError(f"talk {talk.id} segment {number} has no source transcript")
        seg_words = segment.source.split()
        end = start + len(seg_words)
        if words[start:end] != seg_words:
            raise SimulError(f"talk {talk.id}: the transcript is not its segments joined (segment {number})")
        offset = segment.offset_ms or 0.0
        steps: list[Step] = []
        for step in talk.steps:
            known = len(step.source.split())
            if start < known < end:
                text = " ".join(words[start:known])
                time = None if step.time_ms is None else max(0.0, step.time_ms - offset)
                if not steps or steps[-1].source != text:
                    steps.append(Step(text, False, time))
        final_time = None if segment.duration_ms is None else segment.duration_ms
        if final_time is not None and steps and steps[-1].time_ms is not None:
            final_time = max(final_time, steps[-1].time_ms)
        steps.append(Step(segment.source, True, final_time))
        if any(s.time_ms is None for s in steps):
            steps = [Step(s.source, s.final, None) for s in steps]
        out.append(
            Stream(
                id=f"{talk.id}-{number}",
                src=talk.src,
                tgt=talk.tgt,
                steps=tuple(steps),
                reference=segment.references[0] if segment.references else None,
                more_references=tuple(segment.references[1:]),
                provenance={"talk": talk.id, "segment": number, "from": "tools/talk_sentences.py"},
            )
        )
        start = end
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    streams = [s for talk in read_streams(Path(argv[0])) for s in talk_sentences(talk)]
    count = write_streams(Path(argv[1]), streams)
    print(f"wrote {count} sentence streams to {argv[1]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
