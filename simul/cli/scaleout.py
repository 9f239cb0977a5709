"""Scaling a run out from a command: `--shard K/N` (one share, merged later) or `--ray [ADDRESS]`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated

import typer

from simul.cli.common import err_console, interrupt_exit, show_progress
from simul.cli.option_groups import with_group
from simul.cli.running import progress_bar, run_with_progress
from simul.common.errors import UsageError
from simul.runs.evaluation import EvalOutcome, EvalRequest
from simul.runs.ray_runner import LOCAL, RayOptions
from simul.runs.shard import Shard, parse_shard


@dataclass(frozen=True)
class Scaling:
    shard: Shard | None = None
    ray: RayOptions | None = None


@dataclass(frozen=True)
class ScalingOptions:
    """The --shard and --ray* options, as a command gets them (simul.cli.option_groups)."""

    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            help="Decode only shard K of N (K/N; streams are assigned by a hash of their id) into an "
            "ordinary run directory; join the shards with `simul merge`.",
        ),
    ] = None
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Run the shards as Ray workers and merge them: 'local' (a bare --ray) starts a private Ray "
            "instance, or give a cluster address (auto, HOST:PORT, ray://HOST:PORT). Needs simul[ray].",
        ),
    ] = None
    ray_workers: Annotated[int, typer.Option("--ray-workers", help="Ray workers (one model load each).")] = 2
    ray_shards: Annotated[
        int | None,
        typer.Option("--ray-shards", help="Shards to cut the streams into. Default: 2 per worker."),
    ] = None
    ray_cpus: Annotated[
        float, typer.Option("--ray-cpus", help="CPUs per Ray worker (also its llama.cpp threads by default).")
    ] = 1.0
    ray_gpus: Annotated[float, typer.Option("--ray-gpus", help="GPUs per Ray worker.")] = 0.0
    ray_retries: Annotated[
        int, typer.Option("--ray-retries", help="Resume a shard whose worker died this many times.")
    ] = 2

    def scaling(self) -> Scaling:
        if self.shard is not None and self.ray is not None:
            raise UsageError("--shard and --ray do not go together: --ray runs every shard itself")
        if self.ray is None:
            return Scaling(shard=parse_shard(self.shard) if self.shard is not None else None)
        options = RayOptions(
            address=self.ray.strip() or LOCAL,
            workers=self.ray_workers,
            shards=self.ray_shards,
            num_cpus=self.ray_cpus,
            num_gpus=self.ray_gpus,
            retries=self.ray_retries,
        )
        return Scaling(ray=options)


# Subcommands whose --ray may be given without a value (meaning a local instance).
RAY_COMMANDS = ("eval", "sweep")

# Gives a command the --shard and --ray* options (after its own), as one ``scale: ScalingOptions`` argument.
with_scaling_options = with_group("scale", ScalingOptions)


def run_scaled(
    request: EvalRequest,
    scale: Scaling,
    quiet: bool,
    label: str,
    on_interrupt: Callable[[EvalOutcome], None] | None = None,
) -> EvalOutcome:
    """Run in this process (a shard of it with --shard), or on Ray workers with --ray."""
    if scale.ray is None:
        return run_with_progress(dataclasses.replace(request, shard=scale.shard), quiet, label, on_interrupt)
    from simul.runs.ray_runner import run_on_ray

    with progress_bar(show_progress(quiet)) as bar:
        task = bar.add_task(f"{label} on Ray", total=None)
        try:
            merged = run_on_ray(
                request,
                scale.ray,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                on_comet_loading=lambda: bar.update(task, description="merging and scoring"),
            )
        except KeyboardInterrupt as stop:
            bar.stop()
            what, code = interrupt_exit(stop)
            hint = f"; continue with --resume --out {request.out}" if request.out else ""
            err_console.print(f"[yellow]{what}[/]: the shards keep their finished streams{hint}")
            raise typer.Exit(code=code) from None
    return merged.outcome


def optional_ray_value(argv: Sequence[str]) -> list[str]:
    """``simul eval --ray`` with no address means a local instance: supply the value the parser needs."""
    args = list(argv)
    if not args or args[0] not in RAY_COMMANDS:
        return args
    out: list[str] = []
    for i, arg in enumerate(args):
        out.append(arg)
        if arg == "--ray" and (i + 1 == len(args) or args[i + 1].startswith("-")):
            out.append(LOCAL)
    return out
