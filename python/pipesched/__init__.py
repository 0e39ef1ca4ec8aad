"""pipesched: pipeline-parallel training schedules, from Python.

The package wraps pipesched's C++ library (the extension module ``pipesched._pipesched``, built
from the same headers as the ``pipesched`` command-line tool): every schedule of the catalog by
name, explicit schedules from lists of PyTorch action strings, validation with the reason and
the deadlock cycle, cost-model replays, whole iterations, PyTorch CSV, Chakra traces, SimAI's
order, the auto-scheduler and ``plan``. docs/python.md is the reference.

Bad values raise ValueError with the library's message (ScheduleError, a ValueError, when a
schedule is invalid for what was asked); values of the wrong type raise TypeError.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _pipesched as _c

__version__: str = _c.version

__all__ = [
    "BlockedRank", "ChakraExport", "Costs", "Event", "Iteration", "IterationCosts", "IterationOptions",
    "IterationRankSummary", "IterationSimulation", "RankSummary", "Schedule", "ScheduleError",
    "ScheduleInfo", "Simulation", "StageCosts", "TimedAction", "TimedEvent", "Verdict",
    "AutoscheduleResult", "autoschedule", "csv_actions", "explicit_schedule", "parse_csv", "plan",
    "read_csv", "schedule", "schedules", "simai_compare", "simulate", "validate", "write_csv",
]

_INT64 = (-(2**63), 2**63 - 1)


def _int(name: str, value: Any) -> int:
    """An int for the C++ layer, which checks its range and names it in the ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    v = int(value)
    if not _INT64[0] <= v <= _INT64[1]:
        raise ValueError(f"{name} is out of range, got {v}")
    return v


def _float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


def _choice(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def _action_lists(actions: Any) -> List[List[str]]:
    """Per-rank lists of action strings, as the C++ layer takes them."""
    if isinstance(actions, (str, bytes)) or not isinstance(actions, Sequence):
        raise TypeError("actions must be a list of per-rank lists of action strings such as '0F3'")
    out = []
    for r, row in enumerate(actions):
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
            raise TypeError(f"actions[{r}] must be a list of action strings, got {type(row).__name__}")
        for i, cell in enumerate(row):
            if not isinstance(cell, str):
                raise TypeError(f"actions[{r}][{i}] must be a str such as '0F3', got {type(cell).__name__}")
        out.append(list(row))
    return out


# ----------------------------------------------------------------------------------------------
# Catalog
# ----------------------------------------------------------------------------------------------


class ScheduleInfo(NamedTuple):
    """One schedule of the catalog: the library's name, PyTorch's, further spellings."""

    name: str
    pytorch_name: str
    aliases: List[str]
    multi_chunk: bool
    fixed_backward: bool
    placement: str
    default_chunks: int


def schedules() -> List[ScheduleInfo]:
    """Every schedule ``schedule()`` builds, in the catalog's order."""
    return [ScheduleInfo(*row) for row in _c.catalog()]


# ----------------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------------


class Event(NamedTuple):
    """One step on one rank: ``kind`` is the op's name ("forward", "send_activation", ...)."""

    kind: str
    rank: int
    chunk: int
    microbatch: int
    peer: Optional[int]
    stage: int


class BlockedRank(NamedTuple):
    """A rank of a deadlock cycle, blocked at ``index`` waiting to run ``waiting``."""

    rank: int
    index: int
    waiting: str


class Verdict:
    """What validation found: truthy when valid. ``kind`` is the library's code ("valid",
    "deadlock", "missing", ...), ``message`` its description, ``action`` the offending action
    (None when valid), ``cycle`` the ranks of a deadlock."""

    __slots__ = ("kind", "message", "rank", "index", "action", "other_rank", "cycle")

    def __init__(self, row: tuple) -> None:
        self.kind: str = row[0]
        self.message: str = row[1]
        self.rank: int = row[2]
        self.index: int = row[3]
        self.action: Optional[str] = row[4]
        self.other_rank: int = row[5]
        self.cycle: List[BlockedRank] = [BlockedRank(*b) for b in row[6]]

    @property
    def valid(self) -> bool:
        return self.kind == "valid"

    def __bool__(self) -> bool:
        return self.valid

    def __repr__(self) -> str:
        return f"Verdict({self.message!r})"


class ScheduleError(ValueError):
    """A schedule that cannot do what was asked (an invalid order replayed, costs refused);
    ``verdict`` says why."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


@dataclass(frozen=True)
class StageCosts:
    """Durations of one stage (one chunk of one microbatch) and the memory its F allocates
    (M_B) and its W still needs after I (M_W); ``overlapped_forward_backward`` < 0 means an
    overlapped pair takes F + B."""

    forward: float = 1.0
    backward: float = 2.0
    backward_input: float = 1.0
    backward_weight: float = 1.0
    overlapped_forward_backward: float = -1.0
    activation_memory: float = 1.0
    weight_memory: float = 1.0

    def _row(self) -> Tuple[float, ...]:
        return tuple(_float(f"StageCosts.{name}", getattr(self, name)) for name in _STAGE_FIELDS)


_STAGE_FIELDS = ("forward", "backward", "backward_input", "backward_weight", "overlapped_forward_backward",
                 "activation_memory", "weight_memory")


@dataclass(frozen=True)
class Costs(StageCosts):
    """The cost model: every stage's StageCosts (the fields inherited), ``per_stage`` overriding
    them for the first stages (index = global stage), the ``p2p`` latency of every cross-rank
    dependency, and ``fill_with_weight``: a rank that would idle runs its next ready W."""

    per_stage: Sequence[StageCosts] = ()
    p2p: float = 0.0
    fill_with_weight: bool = False

    def _tuple(self) -> tuple:
        per_stage = []
        for k, s in enumerate(self.per_stage):
            if not isinstance(s, StageCosts):
                raise TypeError(f"Costs.per_stage[{k}] must be a StageCosts, got {type(s).__name__}")
            per_stage.append(s._row())
        return (self._row(), per_stage, _float("Costs.p2p", self.p2p), bool(self.fill_with_weight))


def _costs(costs: Optional[Costs]) -> tuple:
    if costs is None:
        return Costs()._tuple()
    if not isinstance(costs, Costs):
        raise TypeError(f"costs must be a pipesched.Costs, got {type(costs).__name__}")
    return costs._tuple()


class RankSummary(NamedTuple):
    busy: float
    idle: float
    peak_activations: int
    peak_memory: float
    first_start: float
    last_end: float


class TimedAction(NamedTuple):
    """An action as replayed: ``index`` is its position in the rank's order."""

    rank: int
    index: int
    action: str
    start: float
    end: float


class Simulation:
    """A replay: ``makespan``, ``bubble_fraction`` (idle over ranks x makespan), ``ranks`` (one
    RankSummary each) and ``timeline`` (every TimedAction, None when not asked for)."""

    __slots__ = ("verdict", "makespan", "bubble_fraction", "ranks", "timeline")

    def __init__(self, row: tuple) -> None:
        self.verdict = Verdict(row[0])
        self.makespan: float = row[1]
        self.bubble_fraction: float = row[2]
        self.ranks: List[RankSummary] = [RankSummary(*r) for r in row[3]]
        self.timeline: Optional[List[TimedAction]] = None if row[4] is None else [TimedAction(*t) for t in row[4]]

    @property
    def peak_activations(self) -> List[int]:
        return [r.peak_activations for r in self.ranks]

    def __repr__(self) -> str:
        return (f"Simulation(makespan={self.makespan:g}, bubble_fraction={self.bubble_fraction:.3f}, "
                f"peak_activations={self.peak_activations})")


def _replayed(row: tuple, cls: Any) -> Any:
    result = cls(row)
    if not result.verdict:
        raise ScheduleError(result.verdict)
    return result


# ----------------------------------------------------------------------------------------------
# Iterations
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IterationOptions:
    """Megatron-LM's defaults: ``grad_sync`` "at_end" or "overlapped"; ``param_gather`` "none",
    "after_step" or "next_iteration" (distributed optimizer)."""

    grad_sync: str = "at_end"
    param_gather: str = "none"
    activation_checkpointing: bool = False
    grad_norm: bool = True
    p2p: bool = True

    def _tuple(self) -> tuple:
        return (_choice("grad_sync", self.grad_sync), _choice("param_gather", self.param_gather),
                bool(self.activation_checkpointing), bool(self.grad_norm), bool(self.p2p))


@dataclass(frozen=True)
class IterationCosts:
    """Costs of a whole iteration: ``compute`` (F, B, I, W per stage), recompute (< 0: the
    forward's time), loss, optimizer step, p2p and data-parallel links (latency plus bytes over
    bandwidth; bandwidth 0 is infinitely fast) and the bytes they move."""

    compute: Costs = field(default_factory=Costs)
    recompute: float = -1.0
    loss: float = 0.0
    optimizer: float = 0.0
    p2p_latency: float = 0.0
    p2p_bandwidth: float = 0.0
    activation_bytes: float = 0.0
    dp_latency: float = 0.0
    dp_bandwidth: float = 0.0
    gradient_bytes: float = 0.0
    parameter_bytes: float = 0.0
    grad_norm: float = 0.0

    def _tuple(self) -> tuple:
        names = ("recompute", "loss", "optimizer", "p2p_latency", "p2p_bandwidth", "activation_bytes", "dp_latency",
                 "dp_bandwidth", "gradient_bytes", "parameter_bytes", "grad_norm")
        return (_costs(self.compute),) + tuple(_float(f"IterationCosts.{n}", getattr(self, n)) for n in names)


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
    """The replay of a whole iteration: as Simulation, with per-rank communication waits
    (``exposed`` by kind: p2p, grad_sync, grad_norm, param_gather) and TimedEvents."""

    __slots__ = ("verdict", "replayed", "makespan", "bubble_fraction", "ranks", "timeline")

    def __init__(self, row: tuple) -> None:
        self.verdict = Verdict(row[0])
        self.replayed: bool = row[1]
        self.makespan: float = row[2]
        self.bubble_fraction: float = row[3]
        self.ranks: List[IterationRankSummary] = [IterationRankSummary(*r) for r in row[4]]
        self.timeline: Optional[List[TimedEvent]] = None if row[5] is None else [TimedEvent(*t) for t in row[5]]

    def __repr__(self) -> str:
        return f"IterationSimulation(makespan={self.makespan:g}, bubble_fraction={self.bubble_fraction:.3f})"


class ChakraExport(NamedTuple):
    """Chakra execution traces, one encoded trace per global rank, and the data-parallel comm
    groups ASTRA-sim's --comm-group-configuration reads (empty with one replica)."""

    traces: List[bytes]
    comm_groups: Dict[str, List[int]]

    def write(self, prefix: Union[str, "os.PathLike[str]"]) -> List[str]:
        """Writes PREFIX.<rank>.et (and PREFIX.groups.json when there are groups) as
        ``pipesched chakra`` names them; returns the file names."""
        prefix = os.fspath(prefix)
        files = []
        for rank, data in enumerate(self.traces):
            name = f"{prefix}.{rank}.et"
            with open(name, "wb") as f:
                f.write(data)
            files.append(name)
        if self.comm_groups:
            name = f"{prefix}.groups.json"
            with open(name, "w", encoding="utf-8") as f:
                json.dump(self.comm_groups, f)
            files.append(name)
        return files


def _to_chakra(handle: Any, options: IterationOptions, costs: Optional[IterationCosts], whole_iteration: bool,
               data_parallel: int, grad_sync_collective: str, activation_bytes: int, gradient_bytes: int,
               parameter_bytes: int, round_durations: bool) -> ChakraExport:
    if costs is not None and not isinstance(costs, IterationCosts):
        raise TypeError(f"costs must be a pipesched.IterationCosts, got {type(costs).__name__}")
    traces, groups = _c.to_chakra(handle, options._tuple(), (costs or IterationCosts())._tuple(), bool(whole_iteration),
                                  _int("data_parallel", data_parallel),
                                  _choice("grad_sync_collective", grad_sync_collective),
                                  _int("activation_bytes", activation_bytes), _int("gradient_bytes", gradient_bytes),
                                  _int("parameter_bytes", parameter_bytes), bool(round_durations))
    return ChakraExport(traces, json.loads(groups))


class Iteration:
    """A schedule inside one whole training iteration (loss, p2p, recompute, grad sync,
    grad norm, optimizer step, param gather), as Megatron-LM runs it."""

    def __init__(self, schedule: "Schedule", options: Optional[IterationOptions] = None) -> None:
        if options is not None and not isinstance(options, IterationOptions):
            raise TypeError(f"options must be a pipesched.IterationOptions, got {type(options).__name__}")
        self.schedule = schedule
        self.options = options or IterationOptions()
        self.options._tuple()  # type errors now rather than at first use

    def events(self) -> List[List[Event]]:
        """Every event of every rank, in order."""
        return [[Event(*e) for e in row] for row in self.schedule._handle.events(self.options._tuple())]

    def validate(self) -> Verdict:
        """The iteration rules (p2p pairing, loss, recompute, grad sync before the step)."""
        return Verdict(_c.validate_iteration(self.schedule._handle, self.options._tuple()))

    def simulate(self, costs: Optional[IterationCosts] = None, timeline: bool = True) -> IterationSimulation:
        """Replays the iteration; raises ScheduleError when it cannot be replayed."""
        if costs is not None and not isinstance(costs, IterationCosts):
            raise TypeError(f"costs must be a pipesched.IterationCosts, got {type(costs).__name__}")
        row = _c.simulate_iteration(self.schedule._handle, self.options._tuple(), (costs or IterationCosts())._tuple(),
                                    bool(timeline))
        return _replayed(row, IterationSimulation)

    def to_chakra(self, costs: Optional[IterationCosts] = None, *, data_parallel: int = 1,
                  grad_sync_collective: str = "all_reduce", activation_bytes: int = 1 << 20,
                  gradient_bytes: int = 1 << 26, parameter_bytes: int = 1 << 26,
                  round_durations: bool = False) -> ChakraExport:
        """The whole iteration as Chakra traces for ASTRA-sim."""
        return _to_chakra(self.schedule._handle, self.options, costs, True, data_parallel, grad_sync_collective,
                          activation_bytes, gradient_bytes, parameter_bytes, round_durations)

    def __repr__(self) -> str:
        return f"Iteration({self.schedule!r}, {self.options!r})"


# ----------------------------------------------------------------------------------------------
# Schedules
# ----------------------------------------------------------------------------------------------


class Schedule:
    """A pipeline schedule: a catalogued one (``schedule()``), an explicit order
    (``explicit_schedule()``, ``read_csv()``) or an auto-scheduler's answer. Immutable."""

    __slots__ = ("_handle",)

    def __init__(self, handle: Any) -> None:
        if not isinstance(handle, _c.Schedule):
            raise TypeError("build a Schedule with pipesched.schedule(), explicit_schedule() or read_csv()")
        self._handle = handle

    name = property(lambda self: self._handle.name, doc="PyTorch's name, or 'explicit' / 'autoschedule'")
    ranks = property(lambda self: self._handle.ranks)
    microbatches = property(lambda self: self._handle.microbatches)
    chunks = property(lambda self: self._handle.chunks)
    placement = property(lambda self: self._handle.placement, doc="'loop' or 'v'")

    @property
    def stages(self) -> int:
        return self.ranks * self.chunks

    def actions(self) -> List[List[str]]:
        """Per rank, its compute actions in order as PyTorch writes them ("0F3"; an overlapped
        pair as one "(0F7;7B3)OVERLAP_F_B")."""
        return self._handle.actions()

    def events(self) -> List[List[Event]]:
        """Per rank, its compute events in order."""
        return [[Event(*e) for e in row] for row in self._handle.events()]

    def validate(self) -> Verdict:
        """Legal and deadlock-free? The verdict is truthy when valid."""
        return Verdict(_c.validate(self._handle))

    def simulate(self, costs: Optional[Costs] = None, timeline: bool = True) -> Simulation:
        """Replays the schedule on a cost model (unit costs by default: F = 1, B = 2, I = W = 1
        per stage); raises ScheduleError when the order or the costs cannot be replayed."""
        return _replayed(_c.simulate(self._handle, _costs(costs), bool(timeline)), Simulation)

    def iteration(self, options: Optional[IterationOptions] = None, **kwargs: Any) -> Iteration:
        """The schedule inside a whole iteration; options as an IterationOptions or keywords."""
        if options is not None and kwargs:
            raise TypeError("give IterationOptions or keywords, not both")
        return Iteration(self, options if options is not None else IterationOptions(**kwargs))

    def to_csv(self, path: Union[None, str, "os.PathLike[str]"] = None) -> str:
        """PyTorch's schedule CSV (what torchtitan's pipeline_parallel_schedule_csv reads); also
        written to ``path`` when given."""
        text = self._handle.to_csv()
        if path is not None:
            with open(os.fspath(path), "w", encoding="ascii", newline="") as f:
                f.write(text)
        return text

    def to_svg(self) -> str:
        """The pipeline diagram (ranks as rows, one box per action) at unit costs, as SVG."""
        return self._handle.to_svg()

    def _repr_svg_(self) -> str:
        """What a notebook shows for a schedule: its diagram."""
        return self.to_svg()

    def to_chakra(self, costs: Optional[IterationCosts] = None, *, data_parallel: int = 1,
                  grad_sync_collective: str = "all_reduce", activation_bytes: int = 1 << 20,
                  gradient_bytes: int = 1 << 26, parameter_bytes: int = 1 << 26,
                  round_durations: bool = False) -> ChakraExport:
        """The schedule's compute and p2p as Chakra traces (``Iteration.to_chakra`` for the
        whole iteration)."""
        return _to_chakra(self._handle, IterationOptions(), costs, False, data_parallel, grad_sync_collective,
                          activation_bytes, gradient_bytes, parameter_bytes, round_durations)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schedule) and self.actions() == other.actions() and \
            self.microbatches == other.microbatches and self.placement == other.placement

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"Schedule({self.name!r}, ranks={self.ranks}, microbatches={self.microbatches}, "
                f"chunks={self.chunks}, placement={self.placement!r})")


def schedule(name: str, ranks: int, microbatches: int, chunks: Optional[int] = None,
             group_size: Optional[int] = None, backward: str = "full") -> Schedule:
    """A schedule of the catalog by any of its names (PyTorch's, the library's, aliases; case,
    '-', '_' and spaces ignored). ``chunks`` defaults to 2 for the multi-chunk schedules;
    ``group_size`` is Interleaved1F1B's; ``backward`` "split" runs I and W instead of B."""
    return Schedule(_c.make_schedule(_choice("name", name), _int("ranks", ranks), _int("microbatches", microbatches),
                                     0 if chunks is None else _int("chunks", chunks),
                                     0 if group_size is None else _int("group_size", group_size),
                                     _choice("backward", backward)))


def explicit_schedule(actions: Sequence[Sequence[str]], microbatches: Optional[int] = None,
                      chunks: Optional[int] = None, placement: Optional[str] = None) -> Schedule:
    """A schedule from per-rank lists of PyTorch action strings ("0F3", "1I0", "2W1",
    "(0F7;7B3)OVERLAP_F_B"), stages numbered globally. The placement ("loop" or "v") and the
    counts are inferred from the actions unless given. For stages placed any other way, use
    ``validate(actions)`` and ``simulate(actions)`` on the lists themselves."""
    return Schedule(_c.explicit_schedule(_action_lists(actions), 0 if microbatches is None else _int("microbatches", microbatches),
                                         0 if chunks is None else _int("chunks", chunks),
                                         "" if placement is None else _choice("placement", placement)))


def csv_actions(text: str) -> List[List[str]]:
    """The compute actions of every rank of a PyTorch CSV text (communication actions are
    left out, as ``pipesched check`` leaves them)."""
    return _c.read_csv(_choice("text", text))


def parse_csv(text: str, **kwargs: Any) -> Schedule:
    """An explicit schedule from PyTorch CSV text; keywords as explicit_schedule()."""
    return explicit_schedule(csv_actions(text), **kwargs)


def read_csv(path: Union[str, "os.PathLike[str]"], **kwargs: Any) -> Schedule:
    """An explicit schedule from a PyTorch CSV file; keywords as explicit_schedule()."""
    with open(os.fspath(path), "r", encoding="ascii", newline="") as f:
        return parse_csv(f.read(), **kwargs)


def write_csv(schedule_or_actions: Union[Schedule, Sequence[Sequence[str]]],
              path: Union[None, str, "os.PathLike[str]"] = None) -> str:
    """PyTorch CSV of a Schedule or of per-rank action lists (checked by the library's parser
    first); written to ``path`` when given."""
    if isinstance(schedule_or_actions, Schedule):
        return schedule_or_actions.to_csv(path)
    lists = _action_lists(schedule_or_actions)
    _c.validate_actions(lists)  # parses every cell: a malformed one is a ValueError naming it
    text = "".join((",".join(row) if row else ",") + "\n" for row in lists)
    if path is not None:
        with open(os.fspath(path), "w", encoding="ascii", newline="") as f:
            f.write(text)
    return text


def validate(target: Union[Schedule, Iteration, Sequence[Sequence[str]]], microbatches: Optional[int] = None,
             stages: Optional[int] = None) -> Verdict:
    """Validates a Schedule, an Iteration, or per-rank action lists (any stage placement;
    ``microbatches`` and ``stages`` the file must cover, as ``pipesched check`` takes them)."""
    if isinstance(target, (Schedule, Iteration)):
        if microbatches is not None or stages is not None:
            raise TypeError("microbatches and stages apply to action lists only")
        return target.validate()
    return Verdict(_c.validate_actions(_action_lists(target), 0 if microbatches is None else _int("microbatches", microbatches),
                                       0 if stages is None else _int("stages", stages)))


def simulate(target: Union[Schedule, Sequence[Sequence[str]]], costs: Optional[Costs] = None,
             timeline: bool = True, microbatches: Optional[int] = None) -> Simulation:
    """Replays a Schedule or per-rank action lists on a cost model (Schedule.simulate)."""
    if isinstance(target, Schedule):
        if microbatches is not None:
            raise TypeError("microbatches applies to action lists only")
        return target.simulate(costs, timeline)
    row = _c.simulate_actions(_action_lists(target), _costs(costs),
                              0 if microbatches is None else _int("microbatches", microbatches), bool(timeline))
    return _replayed(row, Simulation)


# ----------------------------------------------------------------------------------------------
# Auto-schedule, plan, SimAI
# ----------------------------------------------------------------------------------------------


class AutoscheduleResult:
    """The auto-scheduler's answer: truthy when a schedule fits the memory limit. ``schedule``
    is the order (None when nothing fits; ``message`` then says why and ``smallest_limit``
    gives, per rank, the smallest limit under which one exists); the other fields are those of
    ``pipesched autoschedule --format json``."""

    def __init__(self, fits: bool, message: str, handle: Any, fields: Dict[str, Any]) -> None:
        self.fits = fits
        self.message = message
        self.schedule: Optional[Schedule] = None if handle is None else Schedule(handle)
        self.smallest_limit: List[float] = fields.pop("smallest_limit")
        self.placement: Optional[str] = fields.get("placement")
        self.chunks: Optional[int] = fields.get("chunks")
        self.span: Optional[float] = fields.get("span")
        self.makespan: Optional[float] = fields.get("makespan")
        self.bubble_fraction: Optional[float] = fields.get("bubble_fraction")
        self.peak_memory: Optional[List[float]] = fields.get("peak_memory")
        self.method: Optional[str] = fields.get("method")
        self.proven_optimal: Optional[bool] = fields.get("proven_optimal")
        self.heuristic_span: Optional[float] = fields.get("heuristic_span")
        self.lower_bound: Optional[float] = fields.get("lower_bound")
        self.gap: Optional[float] = fields.get("gap")
        self.bound_scope: Optional[str] = fields.get("bound_scope")

    def __bool__(self) -> bool:
        return self.fits

    def __repr__(self) -> str:
        if not self.fits:
            return f"AutoscheduleResult(fits=False, message={self.message!r})"
        return (f"AutoscheduleResult(placement={self.placement!r}, chunks={self.chunks}, span={self.span:g}, "
                f"bubble_fraction={self.bubble_fraction:.3f}, method={self.method!r})")


_STAGE_KEYS = ("forward", "backward_input", "backward_weight", "activation", "weight", "limit")


def autoschedule(ranks: int, microbatches: int, memory_limit: float, *, forward: float = 1.0,
                 backward_input: float = 1.0, backward_weight: float = 1.0, p2p: float = 0.0,
                 activation: float = 1.0, weight: float = 1.0,
                 per_stage: Optional[Sequence[Dict[str, float]]] = None, placement: str = "any",
                 chunks: int = 2) -> AutoscheduleResult:
    """Searches an order of F, I and W minimising the span under a memory limit per rank, as
    ``pipesched autoschedule``: costs of one microbatch through one rank's layers (split evenly
    over its chunks), memory M_B (``activation``) and M_W (``weight``) in any unit.
    ``per_stage``: one dict per rank or per global stage with keys among forward,
    backward_input, backward_weight, activation, weight and limit (missing keys take the
    uniform values). ``placement``: "loop", "v", "interleaved" (``chunks`` chunks) or "any"."""
    uniform = {"forward": forward, "backward_input": backward_input, "backward_weight": backward_weight,
               "activation": activation, "weight": weight, "limit": memory_limit}
    times, memory = [], []
    for k, stage in enumerate(per_stage or ()):
        if not isinstance(stage, dict):
            raise TypeError(f"per_stage[{k}] must be a dict, got {type(stage).__name__}")
        unknown = set(stage) - set(_STAGE_KEYS)
        if unknown:
            raise ValueError(f"per_stage[{k}]: unknown key {sorted(unknown)[0]!r} (keys: {', '.join(_STAGE_KEYS)})")
        row = {key: _float(f"per_stage[{k}].{key}", stage.get(key, uniform[key])) for key in _STAGE_KEYS}
        times.append((row["forward"], row["backward_input"], row["backward_weight"]))
        memory.append((row["activation"], row["weight"], row["limit"]))
    result = _c.autoschedule(_int("ranks", ranks), _int("microbatches", microbatches),
                             (_float("forward", forward), _float("backward_input", backward_input),
                              _float("backward_weight", backward_weight), _float("p2p", p2p)), times,
                             (_float("activation", activation), _float("weight", weight),
                              _float("memory_limit", memory_limit)), memory,
                             _choice("placement", placement), _int("chunks", chunks))
    return AutoscheduleResult(*result)


def _optional_float(name: str, value: Any) -> float:
    return math.nan if value is None else _float(name, value)


def plan(model: Union[None, str, "os.PathLike[str]", Dict[str, Any]] = None, megatron_args: Sequence[str] = (),
         gpu: str = "h100", *, gpus: Optional[int] = None, microbatches: Optional[int] = None,
         gpu_memory: Optional[float] = None, gpu_tflops: Optional[float] = None,
         efficiency: Optional[float] = None, memory_reserve: Optional[float] = None,
         stage_times: Optional[Sequence[Dict[str, float]]] = None, autoschedule: bool = True) -> Dict[str, Any]:
    """``pipesched plan --format json`` as a dict: ``model`` is a Hugging Face config.json (a
    path, or the parsed dict), ``megatron_args`` Megatron-LM launch arguments as a list of
    strings (they override the config), ``gpu`` a preset name. Keywords as the tool's flags
    (memory in GiB, TFLOP/s); ``stage_times`` measured seconds per stage as dicts with keys F
    and B, or F, I and W. Adds "notes": what the config reader assumed."""
    config: Optional[str] = None
    label = "config"
    if isinstance(model, dict):
        config = json.dumps(model)
    elif model is not None:
        path = os.fspath(model)  # TypeError for anything else
        label = path
        with open(path, "r", encoding="utf-8") as f:
            config = f.read(1 << 21)
    if isinstance(megatron_args, str):
        raise TypeError("megatron_args must be a list of strings, e.g. ['--num-layers', '32']")
    words = []
    for k, word in enumerate(megatron_args):
        if not isinstance(word, str):
            raise TypeError(f"megatron_args[{k}] must be a str, got {type(word).__name__}")
        words.append(word)
    times = []
    for k, stage in enumerate(stage_times or ()):
        if not isinstance(stage, dict) or set(stage) - {"F", "B", "I", "W"} or "F" not in stage:
            raise ValueError(f"stage_times[{k}] must be a dict with F and B, or F, I and W")
        v = {key: _float(f"stage_times[{k}].{key}", stage[key]) for key in stage}
        if "B" not in v and ("I" not in v or "W" not in v):
            raise ValueError(f"stage_times[{k}]: give B, or both I and W")
        b = v.get("B", v.get("I", 0.0) + v.get("W", 0.0))
        i = v.get("I", b / 2 if "W" not in v else max(0.0, b - v["W"]))
        w = v.get("W", max(0.0, b - i))
        times.append((v["F"], b, i, w))
    text, notes = _c.plan(config, label, words, _choice("gpu", gpu), 0 if gpus is None else _int("gpus", gpus),
                          0 if microbatches is None else _int("microbatches", microbatches),
                          _optional_float("gpu_memory", gpu_memory), _optional_float("gpu_tflops", gpu_tflops),
                          _optional_float("efficiency", efficiency), _optional_float("memory_reserve", memory_reserve),
                          times, bool(autoschedule))
    report = json.loads(text)
    report["notes"] = notes
    return report


def simai_compare(workload: Union[str, "os.PathLike[str]"], schedule: str = "1F1B") -> Dict[str, Any]:
    """SimAI's execution order of an AICB workload (a path, or the workload's text) against a
    catalogued schedule's: the two orders' facts, the problems of SimAI's, the times per
    microbatch. Verdicts are Verdict objects."""
    if isinstance(workload, str) and "\n" in workload:
        text = workload
    else:
        with open(os.fspath(workload), "r", encoding="utf-8") as f:
            text = f.read()
    out = _c.simai_compare(text, _choice("schedule", schedule))
    for key in ("simai", "corrected"):
        out[key]["verdict"] = Verdict(out[key]["verdict"])
    return out
