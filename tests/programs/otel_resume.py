"""Resume a paused trip thread on a SQLite file, traced, in a process of its own:
``python otel_resume.py FILE THREAD ANSWER`` prints each finished span as a JSON line
(name, ids, parent, links, events)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphs import trip_graph  # noqa: E402

import nbgraph.otel  # noqa: E402
from nbgraph import Resume, SQLiteCheckpointer  # noqa: E402


def main(path: str, thread: str, answer: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    nbgraph.otel.instrument(provider)
    result = trip_graph().invoke(Resume(thread, answer), checkpointer=SQLiteCheckpointer(path))
    assert result.outcome == "done", result.reason
    for span in exporter.get_finished_spans():
        assert span.context is not None
        print(
            json.dumps(
                {
                    "name": span.name,
                    "trace_id": span.context.trace_id,
                    "span_id": span.context.span_id,
                    "parent": span.parent.span_id if span.parent else None,
                    "links": [[link.context.trace_id, link.context.span_id] for link in span.links],
                    "events": [[event.name, dict(event.attributes or {})] for event in span.events],
                }
            )
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
