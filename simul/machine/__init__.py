"""The machine a run is decoded on: how many threads llama.cpp gets (threads), OpenMP's wait policy (openmp),
how much CPU each method got and whether its timings can be trusted (cpu_usage), what one forward pass costs
(calibration), the clocks timings are read from (clock), loading a CUDA llama.cpp before numpy (load_order),
and the facts about machine and software recorded with a run (environment).

In the stage order (README, "Code layout") machine sits beside decoding, just below it: the decoder, the
engine and the backend use it, and it imports nothing of decoding (the calibration takes any backend through
a Protocol) nor of the stages above (which figures a report marks is simul.reports.timing_notes)."""
