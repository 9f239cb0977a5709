"""Memory bandwidth of this machine with 1 and 2 copying processes (numpy copyto of 256 MB, best of 7 each):
the read + write bytes per second, summed over the processes, that a forward pass's weight reads compete for.

    python bandwidth.py
"""

import multiprocessing as mp
import time

import numpy as np

SIZE = 256 * 2**20  # bytes per buffer


def copy_rate(start: "mp.synchronize.Barrier", out: "mp.Queue[float]") -> None:
    x = np.ones(SIZE // 8)
    y = np.empty_like(x)
    np.copyto(y, x)
    best = float("inf")
    for _ in range(7):
        start.wait()
        t0 = time.perf_counter()
        np.copyto(y, x)
        best = min(best, time.perf_counter() - t0)
    out.put(2 * x.nbytes / best / 1e9)


if __name__ == "__main__":
    for procs in (1, 2):
        barrier = mp.Barrier(procs)
        queue: "mp.Queue[float]" = mp.Queue()
        workers = [mp.Process(target=copy_rate, args=(barrier, queue)) for _ in range(procs)]
        for w in workers:
            w.start()
        rates = [queue.get() for _ in workers]
        for w in workers:
            w.join()
        print(f"{procs} process(es): {sum(rates):.1f} GB/s in all ({', '.join(f'{r:.1f}' for r in rates)})")
