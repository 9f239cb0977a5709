"""Long-form scoring as IWSLT 2026 does it: a talk's output re-segmented onto its reference segments, then
BLEU/chrF/COMET and the long-form latencies (LongYAAL, LongLAAL = StreamLAAL, LongAL, LongDAL; CU and CA).

Modules: ``talk`` (the data scored), ``delays`` (a talk's updates -> final units with delays), ``resegment``
(SoftSegmenter via OmniSTEval, mWER via mweralign), ``latency``, ``scoring`` (``score_talks``, the entry
point) and ``omnisteval_files`` (OmniSTEval's input files, written and read back).
"""
