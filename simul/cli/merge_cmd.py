"""`simul merge OUT SHARD_DIR...`: join shard runs (`--shard K/N`) into one run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simul.cli.aliases import command_class
from simul.cli.common import JsonOpt, OverwriteOpt, QuietOpt, err_console, handle_errors
from simul.cli.eval_cmd import print_outcome
from simul.cli.scoring_options import RequireCometOpt, RescoreCometBatchOpt, RescoreCometModelOpt
from simul.cli.sweep_cmd import report_sweep
from simul.runs.merge import MergeOutcome, merge_shards


def print_shards(merged: MergeOutcome) -> None:
    for s in sorted(merged.shards, key=lambda s: s.shard.index):
        env = s.run.get("environment", {})
        err_console.print(
            f"shard {s.shard.label}: {len(s.positions)} streams, {env.get('cpu')}, "
            f"{s.run['config'].get('threads')} threads, {env.get('started')} to {env.get('finished')} "
            f"({s.path})",
            soft_wrap=True,
        )


def register(app: typer.Typer) -> None:
    @app.command("merge", cls=command_class())
    @handle_errors
    def merge_command(
        out: Annotated[Path, typer.Argument(help="The merged run directory to write.")],
        shard_dirs: Annotated[
            list[Path], typer.Argument(help="The shard run directories (from --shard K/N), all of them.")
        ],
        overwrite: OverwriteOpt = False,
        comet_model: RescoreCometModelOpt = None,
        comet_batch_size: RescoreCometBatchOpt = None,
        require_comet: RequireCometOpt = False,
        as_json: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Check that shard runs belong together and merge them into one run (COMET is computed here).

        Refuses (exit 2), naming what differs or is missing, when the shards come from different stream
        files, models, configurations, simul or llama-cpp-python versions, thread counts, CPU instruction
        sets or metric signatures, overlap, leave streams out, or are not complete.
        """
        merged = merge_shards(
            shard_dirs,
            out,
            overwrite=overwrite,
            comet_model=comet_model,
            comet_batch_size=comet_batch_size,
            require_comet=require_comet,
        )
        outcome = merged.outcome
        if not quiet:
            print_shards(merged)
        sweep = outcome.run["config"].get("sweep")
        if isinstance(sweep, dict) and "mask_beta" in sweep:
            report_sweep(outcome, float(sweep["mask_beta"]), as_json, quiet)
        else:
            print_outcome(outcome, as_json, quiet, command="simul merge")
