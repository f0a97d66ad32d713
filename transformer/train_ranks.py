"""This process's place in a data-parallel training run (torchrun), and progress printed once."""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .device import pick_device


@dataclass(frozen=True)
class Ranks:
    """This process's place in a data-parallel run (torchrun's environment); one process: rank 0 of 1."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    def sum(self, values: list[float]) -> list[float]:
        """The values summed over ranks (a no-op alone)."""
        if self.world == 1:
            return values
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t)
        return t.tolist()

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def share(self, value):
        """Rank 0's value, on every rank."""
        if self.world == 1:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]


def join_ranks(requested: str) -> tuple[Ranks, torch.device]:
    """Under torchrun: join the process group (NCCL when each process has a GPU, else gloo); alone: nothing."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    device = pick_device(requested)
    if world == 1:
        return Ranks(), device
    ranks = Ranks(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")))
    device = rank_device(device, ranks.local_rank, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return ranks, device


def rank_device(device: torch.device, local_rank: int, local_world: int) -> torch.device:
    """GPU `local_rank` when each of this machine's `local_world` processes has a GPU of its own (NCCL needs
    one per process), else the CPU for all of them, said once: every process decides alike."""
    if device.type != "cuda":
        return device
    gpus = torch.cuda.device_count()
    if local_world <= gpus:
        return torch.device("cuda", local_rank)
    if local_rank == 0:
        warnings.warn(f"{local_world} processes on this machine but {gpus} GPU(s): each process needs a GPU of its "
                      f"own, so all of them train on the CPU; start at most {gpus} per machine (--nproc-per-node) "
                      "to train on the GPUs", stacklevel=2)
    return torch.device("cpu")


def say(message: str) -> None:
    """Progress, from rank 0 only."""
    if int(os.environ.get("RANK", "0")) == 0:
        print(message, flush=True)
