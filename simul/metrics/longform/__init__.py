"""Long-form scoring as IWSLT 2026 does it: a talk's output re-segmented onto its reference segments, then
BLEU/chrF/COMET and the long-form latencies (LongYAAL, LongLAAL = StreamLAAL, LongAL, LongDAL; CU and CA).

Modules: ``talk`` (the data scored), ``delays`` (a talk's updates -> final units with delays), ``resegment``
(SoftSegmenter via OmniSTEval, mWER via mweralign), ``latency``, ``scoring`` (``score_talks``, the entry
point) and ``omnisteval_files`` (OmniSTEval's input files, written and read back).
"""

from simul.metrics.longform.delays import TalkUpdate, final_units, talk_from_records
from simul.metrics.longform.omnisteval_files import read_omnisteval_inputs, write_omnisteval_inputs
from simul.metrics.longform.scoring import LongformScores, score_talks
from simul.metrics.longform.talk import LongformTalk, TalkSegment

__all__ = [
    "LongformScores",
    "LongformTalk",
    "TalkSegment",
    "TalkUpdate",
    "final_units",
    "read_omnisteval_inputs",
    "score_talks",
    "talk_from_records",
    "write_omnisteval_inputs",
]
