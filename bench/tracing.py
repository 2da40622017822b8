"""What OpenTelemetry tracing (``nbgraph.otel.instrument``) costs per node execution.

The workloads of ``bench/engine.py`` with no checkpointer: (a) a 2-node cycle run for
1,000 iterations, (b) a 5-node pipeline invoked 1,000 times. Each runs with tracing off
(nothing instrumented: what every run pays), with a listener that does nothing (what the
engine spends building the events a tracer hears), on with the SDK's in-memory exporter (a
span per node and per run, exported as each ends), and on with every trace sampled out.

Run: python bench/tracing.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from functools import partial

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from engine import (  # noqa: E402  (bench/engine.py: the same graphs, the same clock)
    CYCLE_ITERATIONS,
    PIPELINE_NODES,
    PIPELINE_RUNS,
    best,
    run_cycle,
    run_pipeline,
)
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF  # noqa: E402

import nbgraph.otel  # noqa: E402
from nbgraph.engine.run import observe_runs  # noqa: E402


def traced(measure: Callable[[], float], *, sampled: bool, expected_spans: int) -> Callable[[], float]:
    """``measure`` with every run traced to a fresh in-memory exporter (or sampled out)."""

    def once() -> float:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(sampler=None if sampled else ALWAYS_OFF)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        nbgraph.otel.instrument(provider)
        try:
            elapsed = measure()
        finally:
            nbgraph.otel.uninstrument()
        spans = len(exporter.get_finished_spans())
        assert spans == (expected_spans if sampled else 0), spans
        return elapsed

    return once


def listened(measure: Callable[[], float]) -> Callable[[], float]:
    """``measure`` with every run heard by a listener that does nothing."""

    def once() -> float:
        stop = observe_runs(lambda run: lambda event: None)
        try:
            return measure()
        finally:
            stop()

    return once


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, best of {args.repeat}; microseconds per node execution, no checkpointer")
    print(f"{'workload':<32}{'off':>9}{'listener':>10}{'on':>9}{'added':>9}{'sampled out':>13}")
    cycle_nodes = 2 * CYCLE_ITERATIONS
    pipeline_nodes = PIPELINE_RUNS * PIPELINE_NODES
    for label, run, nodes, runs in (
        ("(a) 2-node cycle x1000", run_cycle, cycle_nodes, 1),
        ("(b) 5-node pipeline x1000 runs", run_pipeline, pipeline_nodes, PIPELINE_RUNS),
    ):
        measure = partial(run, lambda: None)  # no checkpointer
        off = best(measure, args.repeat) / nodes * 1e6
        heard = best(listened(measure), args.repeat) / nodes * 1e6
        on = best(traced(measure, sampled=True, expected_spans=nodes + runs), args.repeat) / nodes * 1e6
        dropped = best(traced(measure, sampled=False, expected_spans=0), args.repeat) / nodes * 1e6
        print(f"{label:<32}{off:>9.2f}{heard:>10.2f}{on:>9.2f}{on - off:>9.2f}{dropped:>13.2f}")


if __name__ == "__main__":
    main()
