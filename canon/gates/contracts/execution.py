"""The normalized execution a trace describes: the shared model of the contract gate.

The OTel normalizer produces an ``Execution``; constraints and conditions read one.
Validation mostly reads three facts per step (name, kind, status), so an execution keeps
its steps as ``StepColumns``: those three columns up front, whole ``Step`` values built on
first read (a trace of hundreds of spans is usually judged without building any).

``Step`` is an immutable named tuple rather than a frozen dataclass: the normalizer builds
one per span, and a frozen dataclass sets every field through ``object.__setattr__``,
which made step construction a large share of normalization time. A step's tool
arguments and result live in a ``StepPayload`` so the normalizer can parse them only when
something reads ``inputs`` or ``outputs``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, overload

StepKind = Literal["tool_call", "model_call", "retrieval", "agent", "human_review", "custom"]
StepStatus = Literal["ok", "error", "unset"]


@dataclass(frozen=True, slots=True)
class DataSource:
    """A data source a step consulted (from the trace itself or a contract's source map)."""

    name: str
    type: str


class StepPayload:
    """A step's tool arguments and result; subclasses may produce them on first read."""

    __slots__ = ("_pair",)

    def __init__(self, inputs: Any = None, outputs: Any = None) -> None:
        self._pair = (inputs, outputs)

    def _load(self) -> tuple[Any, Any]:
        """Produce ``(inputs, outputs)``; only lazy subclasses get here."""
        return None, None

    def pair(self) -> tuple[Any, Any]:
        """``(inputs, outputs)``, loaded once and then kept."""
        try:
            return self._pair
        except AttributeError:
            self._pair = self._load()
            return self._pair

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StepPayload):
            return NotImplemented
        return self is other or self.pair() == other.pair()

    __hash__ = None  # type: ignore[assignment]  # payloads hold dicts and lists

    def __repr__(self) -> str:
        inputs, outputs = self.pair()
        return f"StepPayload(inputs={inputs!r}, outputs={outputs!r})"


NO_PAYLOAD = StepPayload()


class _StepFields(NamedTuple):
    name: str
    kind: StepKind
    span_id: str
    parent_id: str
    start_ns: int
    end_ns: int
    status: StepStatus
    sources: tuple[DataSource, ...]
    attributes: Mapping[str, Any]
    payload: StepPayload


class Step(_StepFields):
    """One span of the trace, classified."""

    __slots__ = ()

    def __new__(
        cls,
        name: str,
        kind: StepKind,
        span_id: str = "",
        parent_id: str = "",
        start_ns: int = 0,
        end_ns: int = 0,
        status: StepStatus = "unset",
        inputs: Any = None,
        outputs: Any = None,
        sources: tuple[DataSource, ...] = (),
        attributes: Mapping[str, Any] | None = None,
    ) -> Step:
        payload = NO_PAYLOAD if inputs is None and outputs is None else StepPayload(inputs, outputs)
        return super().__new__(
            cls,
            name,
            kind,
            span_id,
            parent_id,
            start_ns,
            end_ns,
            status,
            sources,
            {} if attributes is None else attributes,
            payload,
        )

    @property
    def inputs(self) -> Any:
        """Parsed tool arguments, when the trace carries them."""
        return self.payload.pair()[0]

    @property
    def outputs(self) -> Any:
        """Parsed tool result, when the trace carries it."""
        return self.payload.pair()[1]

    def __getnewargs__(self) -> tuple[Any, ...]:
        # copy and pickle rebuild through __new__, whose parameters are not the tuple's items
        return (
            self.name,
            self.kind,
            self.span_id,
            self.parent_id,
            self.start_ns,
            self.end_ns,
            self.status,
            self.inputs,
            self.outputs,
            self.sources,
            dict(self.attributes),
        )

    def __repr__(self) -> str:
        return (
            f"Step(name={self.name!r}, kind={self.kind!r}, span_id={self.span_id!r}, "
            f"parent_id={self.parent_id!r}, start_ns={self.start_ns!r}, "
            f"end_ns={self.end_ns!r}, status={self.status!r}, inputs={self.inputs!r}, "
            f"outputs={self.outputs!r}, sources={self.sources!r}, "
            f"attributes={dict(self.attributes)!r})"
        )


STEP_NAME = attrgetter("name")
_STEP_KIND = attrgetter("kind")
_STEP_STATUS = attrgetter("status")


class StepColumns(Sequence[Step]):
    """An execution's steps: name, kind and status columns, and the ``Step`` values on demand.

    ``build`` returns every step, in order, agreeing with the columns; it runs at most once.
    ``build_one`` (if given) builds the step at one position, so a check that reads a few
    steps (``tool_result_matches`` on one tool) need not build them all.
    """

    __slots__ = ("_build", "_build_one", "_steps", "kinds", "names", "statuses")
    _steps: tuple[Step, ...]

    def __init__(
        self,
        names: tuple[str, ...],
        kinds: tuple[StepKind, ...],
        statuses: tuple[StepStatus, ...],
        build: Callable[[], tuple[Step, ...]],
        build_one: Callable[[int], Step] | None = None,
    ) -> None:
        self.names = names
        self.kinds = kinds
        self.statuses = statuses
        self._build = build
        self._build_one = build_one

    @classmethod
    def of(cls, steps: Iterable[Step]) -> StepColumns:
        """The columns of steps that already exist."""
        built = tuple(steps)
        return cls(
            tuple(map(STEP_NAME, built)),
            tuple(map(_STEP_KIND, built)),
            tuple(map(_STEP_STATUS, built)),
            lambda: built,
        )

    def named(self, name: str) -> Iterator[Step]:
        """The steps called ``name``, in order, building only those (and only as read)."""
        build_one = self._build_one
        if build_one is None or hasattr(self, "_steps"):
            steps = self._all()
            return map(steps.__getitem__, self._positions(name))
        return map(build_one, self._positions(name))

    def _positions(self, name: str) -> Iterator[int]:
        """Where the steps called ``name`` are, found one at a time (a reader may stop early)."""
        names = self.names
        at = -1
        while True:
            try:
                at = names.index(name, at + 1)
            except ValueError:
                return
            yield at

    def _all(self) -> tuple[Step, ...]:
        try:
            return self._steps
        except AttributeError:
            self._steps = self._build()
            return self._steps

    @overload
    def __getitem__(self, index: int) -> Step: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Step, ...]: ...

    def __getitem__(self, index: int | slice) -> Step | tuple[Step, ...]:
        return self._all()[index]

    def __iter__(self) -> Iterator[Step]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self.names)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StepColumns):
            other = other._all()
        if not isinstance(other, tuple | list):
            return NotImplemented
        return self._all() == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # steps hold mappings

    def __reduce__(self) -> tuple[Any, ...]:
        return StepColumns.of, (self._all(),)

    def __repr__(self) -> str:
        return f"StepColumns({list(self._all())!r})"


@dataclass(frozen=True, slots=True)
class Reading:
    """How a trace file was read into an execution: the formats that read it (their titles,
    in file order), how many runs the file held, the spans of this run, and its tool calls
    in order. Shown beside a missing required step, so a reader can tell a misreading from
    a step the agent did not take."""

    formats: tuple[str, ...]
    runs: int
    spans: int
    tools: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as a violation's evidence carries it."""
        return {
            "formats": list(self.formats),
            "runs": self.runs,
            "spans": self.spans,
            "tools": list(self.tools),
        }

    def describe(self) -> str:
        """One line: ``read as OTLP JSON: 1 run, 12 spans, 3 tool spans (a, b, c)``."""
        shown = ", ".join(self.tools[:8]) + (", ..." if len(self.tools) > 8 else "")
        tools = f"{len(self.tools)} tool span{'s' if len(self.tools) != 1 else ''}"
        return (
            f"read as {' + '.join(self.formats) or 'spans'}: {self.runs} "
            f"run{'s' if self.runs != 1 else ''}, {self.spans} span"
            f"{'s' if self.spans != 1 else ''}, {tools}" + (f" ({shown})" if shown else "")
        )


@dataclass(frozen=True, slots=True)
class Execution:
    """Everything a contract can look at: ordered steps, request and answer text, metadata.

    ``steps`` may be given as any sequence of ``Step``; it is kept as ``StepColumns``.
    ``framework`` is only reported, never validated, so the normalizer names it on first
    read (``detecting``): a trace whose scope names no framework costs a look at every
    span's attributes, which a verdict does not need.
    """

    execution_id: str
    steps: Sequence[Step]
    input_text: str | None = None
    output_text: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    framework: str = "unknown"
    reading: Reading | None = field(default=None, repr=False, compare=False)
    columns: StepColumns = field(init=False, repr=False, compare=False)
    _detect: Callable[[], str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        steps = self.steps
        columns = steps if isinstance(steps, StepColumns) else StepColumns.of(steps)
        object.__setattr__(self, "steps", columns)
        object.__setattr__(self, "columns", columns)

    @classmethod
    def detecting(
        cls,
        execution_id: str,
        steps: Sequence[Step],
        input_text: str | None,
        output_text: str | None,
        metadata: Mapping[str, Any],
        detect: Callable[[], str],
        reading: Reading | None = None,
    ) -> Execution:
        """An execution whose ``framework`` is ``detect()``, called once, when first read."""
        execution = cls(execution_id, steps, input_text, output_text, metadata, reading=reading)
        # an unset slot makes a read of ``framework`` fall through to ``__getattr__``
        object.__delattr__(execution, "framework")
        object.__setattr__(execution, "_detect", detect)
        return execution

    if not TYPE_CHECKING:  # so mypy still flags misspelt attributes of an Execution

        def __getattr__(self, name: str) -> Any:
            detect = object.__getattribute__(self, "_detect")
            if name != "framework" or detect is None:
                raise AttributeError(f"'Execution' object has no attribute {name!r}")
            found = detect()
            object.__setattr__(self, "framework", found)
            object.__setattr__(self, "_detect", None)  # the spans it reads can go now
            return found

    def step_names(self) -> tuple[str, ...]:
        """Names of every step, in execution order."""
        return self.columns.names
