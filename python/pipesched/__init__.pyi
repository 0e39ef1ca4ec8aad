# Type stubs of the package pipesched (python/pipesched/__init__.py), for editors and type
# checkers; docs/python.md is the reference.
import os
from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Union

__version__: str

_Path = Union[str, "os.PathLike[str]"]
_Actions = Sequence[Sequence[str]]

class ScheduleInfo(NamedTuple):
    name: str
    pytorch_name: str
    aliases: List[str]
    multi_chunk: bool
    fixed_backward: bool
    placement: str
    default_chunks: int

def schedules() -> List[ScheduleInfo]: ...

class Event(NamedTuple):
    kind: str
    rank: int
    chunk: int
    microbatch: int
    peer: Optional[int]
    stage: int

class BlockedRank(NamedTuple):
    rank: int
    index: int
    waiting: str

class Verdict:
    kind: str
    message: str
    rank: int
    index: int
    action: Optional[str]
    other_rank: int
    cycle: List[BlockedRank]
    @property
    def valid(self) -> bool: ...
    def __bool__(self) -> bool: ...

class ScheduleError(ValueError):
    verdict: Verdict
    def __init__(self, verdict: Verdict) -> None: ...

@dataclass(frozen=True)
class StageCosts:
    forward: float = ...
    backward: float = ...
    backward_input: float = ...
    backward_weight: float = ...
    overlapped_forward_backward: float = ...
    activation_memory: float = ...
    weight_memory: float = ...

@dataclass(frozen=True)
class Costs(StageCosts):
    per_stage: Sequence[StageCosts] = ...
    p2p: float = ...
    fill_with_weight: bool = ...

class RankSummary(NamedTuple):
    busy: float
    idle: float
    peak_activations: int
    peak_memory: float
    first_start: float
    last_end: float

class TimedAction(NamedTuple):
    rank: int
    index: int
    action: str
    start: float
    end: float

class Simulation:
    verdict: Verdict
    makespan: float
    bubble_fraction: float
    ranks: List[RankSummary]
    timeline: Optional[List[TimedAction]]
    @property
    def peak_activations(self) -> List[int]: ...

@dataclass(frozen=True)
class IterationOptions:
    grad_sync: str = ...
    param_gather: str = ...
    activation_checkpointing: bool = ...
    grad_norm: bool = ...
    p2p: bool = ...

@dataclass(frozen=True)
class IterationCosts:
    compute: Costs = ...
    recompute: float = ...
    loss: float = ...
    optimizer: float = ...
    p2p_latency: float = ...
    p2p_bandwidth: float = ...
    activation_bytes: float = ...
    dp_latency: float = ...
    dp_bandwidth: float = ...
    gradient_bytes: float = ...
    parameter_bytes: float = ...
    grad_norm: float = ...

class IterationRankSummary(NamedTuple):
    compute_busy: float
    idle: float
    exposed: Dict[str, float]
    peak_activations: int
    end: float

class TimedEvent(NamedTuple):
    rank: int
    index: int
    kind: str
    chunk: int
    microbatch: int
    peer: Optional[int]
    stage: int
    start: float
    end: float
    comm_stream: bool

class IterationSimulation:
    verdict: Verdict
    replayed: bool
    makespan: float
    bubble_fraction: float
    ranks: List[IterationRankSummary]
    timeline: Optional[List[TimedEvent]]

class ChakraExport(NamedTuple):
    traces: List[bytes]
    comm_groups: Dict[str, List[int]]
    def write(self, prefix: _Path) -> List[str]: ...

class Iteration:
    schedule: Schedule
    options: IterationOptions
    def __init__(self, schedule: Schedule, options: Optional[IterationOptions] = ...) -> None: ...
    def events(self) -> List[List[Event]]: ...
    def validate(self) -> Verdict: ...
    def simulate(self, costs: Optional[IterationCosts] = ..., timeline: bool = ...) -> IterationSimulation: ...
    def to_chakra(self, costs: Optional[IterationCosts] = ..., *, data_parallel: int = ...,
                  grad_sync_collective: str = ..., activation_bytes: int = ..., gradient_bytes: int = ...,
                  parameter_bytes: int = ..., round_durations: bool = ...) -> ChakraExport: ...

class Schedule:
    @property
    def name(self) -> str: ...
    @property
    def ranks(self) -> int: ...
    @property
    def microbatches(self) -> int: ...
    @property
    def chunks(self) -> int: ...
    @property
    def placement(self) -> str: ...
    @property
    def stages(self) -> int: ...
    def actions(self) -> List[List[str]]: ...
    def events(self) -> List[List[Event]]: ...
    def validate(self) -> Verdict: ...
    def simulate(self, costs: Optional[Costs] = ..., timeline: bool = ...) -> Simulation: ...
    def iteration(self, options: Optional[IterationOptions] = ..., *, grad_sync: str = ..., param_gather: str = ...,
                  activation_checkpointing: bool = ..., grad_norm: bool = ..., p2p: bool = ...) -> Iteration: ...
    def to_csv(self, path: Optional[_Path] = ...) -> str: ...
    def to_svg(self) -> str: ...
    def _repr_svg_(self) -> str: ...
    def to_chakra(self, costs: Optional[IterationCosts] = ..., *, data_parallel: int = ...,
                  grad_sync_collective: str = ..., activation_bytes: int = ..., gradient_bytes: int = ...,
                  parameter_bytes: int = ..., round_durations: bool = ...) -> ChakraExport: ...

def schedule(name: str, ranks: int, microbatches: int, chunks: Optional[int] = ..., group_size: Optional[int] = ...,
             backward: str = ...) -> Schedule: ...
def explicit_schedule(actions: _Actions, microbatches: Optional[int] = ..., chunks: Optional[int] = ...,
                      placement: Optional[str] = ...) -> Schedule: ...
def csv_actions(text: str) -> List[List[str]]: ...
def parse_csv(text: str, *, microbatches: Optional[int] = ..., chunks: Optional[int] = ...,
              placement: Optional[str] = ...) -> Schedule: ...
def read_csv(path: _Path, *, microbatches: Optional[int] = ..., chunks: Optional[int] = ...,
             placement: Optional[str] = ...) -> Schedule: ...
def write_csv(schedule_or_actions: Union[Schedule, _Actions], path: Optional[_Path] = ...) -> str: ...
def validate(target: Union[Schedule, Iteration, _Actions], microbatches: Optional[int] = ...,
             stages: Optional[int] = ...) -> Verdict: ...
def simulate(target: Union[Schedule, _Actions], costs: Optional[Costs] = ..., timeline: bool = ...,
             microbatches: Optional[int] = ...) -> Simulation: ...

class AutoscheduleResult:
    fits: bool
    message: str
    schedule: Optional[Schedule]
    smallest_limit: List[float]
    placement: Optional[str]
    chunks: Optional[int]
    span: Optional[float]
    makespan: Optional[float]
    bubble_fraction: Optional[float]
    peak_memory: Optional[List[float]]
    method: Optional[str]
    proven_optimal: Optional[bool]
    heuristic_span: Optional[float]
    lower_bound: Optional[float]
    gap: Optional[float]
    bound_scope: Optional[str]
    def __bool__(self) -> bool: ...

def autoschedule(ranks: int, microbatches: int, memory_limit: float, *, forward: float = ...,
                 backward_input: float = ..., backward_weight: float = ..., p2p: float = ...,
                 activation: float = ..., weight: float = ..., per_stage: Optional[Sequence[Dict[str, float]]] = ...,
                 placement: str = ..., chunks: int = ...) -> AutoscheduleResult: ...
def plan(model: Union[None, _Path, Dict[str, Any]] = ..., megatron_args: Sequence[str] = ..., gpu: str = ..., *,
         gpus: Optional[int] = ..., microbatches: Optional[int] = ..., gpu_memory: Optional[float] = ...,
         gpu_tflops: Optional[float] = ..., efficiency: Optional[float] = ..., memory_reserve: Optional[float] = ...,
         stage_times: Optional[Sequence[Dict[str, float]]] = ..., autoschedule: bool = ...) -> Dict[str, Any]: ...
def simai_compare(workload: _Path, schedule: str = ...) -> Dict[str, Any]: ...
