"""The machine a run is decoded on: how many threads llama.cpp gets (threads), OpenMP's wait policy (openmp),
how much CPU each method got and whether its timings can be trusted (cpu_usage), the clocks timings are read
from (clock), and the facts about machine and software recorded with a run (environment)."""
