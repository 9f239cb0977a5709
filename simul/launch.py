"""The `simul` command's entry point: what must happen before the command line is imported.

simul.cli imports a command's module only when the command runs, and a decoding command's module imports
numpy (through the engine and the metrics). On a CUDA build of llama.cpp that command must load llama.cpp
first (simul.machine.load_order), so the console script and ``python -m simul`` start here.
"""

from __future__ import annotations

import sys


def main() -> None:
    from simul.machine.load_order import load_llama_first

    load_llama_first(sys.argv[1:])
    from simul.cli import main as cli_main

    cli_main()
