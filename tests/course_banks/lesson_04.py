"""Tutorial 4, billing tickets go to the queue."""

from checkbank import Answer, Exercise

_SUPPORT = """%%graph support --max-steps 10
START -> read_ticket -> triage
{edges}
triage -> queue
page_oncall -> END
billing -> END
queue -> END"""

_PAGES = "triage -> page_oncall  if int(state.severity) >= 7"


def _support(billing: str, pages: str = _PAGES, billing_first: bool = False) -> str:
    edges = [pages, f"triage -> billing      if {billing}"]
    return _SUPPORT.format(edges="\n".join(reversed(edges) if billing_first else edges))


EXERCISES = [
    Exercise(
        lesson="04-debugging.ipynb",
        heading="## Exercise: billing tickets go to the queue",
        check='course.verdict(exercise_problems(), "billing tickets reach billing, whatever their capitals.")',
        wrong=(
            Answer(
                "the condition fixed in the text but the cell not run again",
                (),
                says="topic 'Billing', severity 2: went read_ticket -> triage -> queue, should end at billing",
            ),
            Answer(
                "the one capitalisation of the example matched, not every one",
                (_support('state.topic == "Billing"'),),
                says="topic 'BILLING', severity 3: went read_ticket -> triage -> queue",
            ),
            Answer(
                "both spellings listed, still not whatever the capitals",
                (_support('state.topic in ("billing", "Billing")'),),
                says="topic 'BILLING'",
            ),
            Answer(
                "lower-cased, but compared with a capital: it never holds",
                (_support('state.topic.lower() == "Billing"'),),
                says='state.topic.lower() == "Billing" = False',
            ),
            Answer(
                "the billing edge moved first: a severe billing ticket no longer pages",
                (_support('state.topic.lower() == "billing"', billing_first=True),),
                says="topic 'billing', severity 9: went read_ticket -> triage -> billing, should end at page_oncall",
            ),
            Answer(
                "the fix made in the first routing cell, which still compares severities as text",
                (
                    _support(
                        'state.topic.lower() == "billing"', pages='triage -> page_oncall  if state.severity >= "7"'
                    ),
                ),
                says="topic 'outage', severity 10: went read_ticket -> triage -> queue, should end at page_oncall",
            ),
        ),
        right=(
            Answer("casefold instead of lower", (_support('state.topic.casefold() == "billing"'),)),
            Answer(
                "the topic normalised where the ticket is read; the routing cell run again unchanged",
                (
                    'def read_ticket(state):\n    CALLS["read_ticket"] += 1\n'
                    '    return {"subject": state.subject.strip(), "topic": state.topic.strip().lower()}',
                    _support('state.topic == "billing"'),
                ),
            ),
            Answer(
                "a router function instead of conditions",
                (
                    'def triage_route(state):\n    if int(state.severity) >= 7:\n        return "page_oncall"\n'
                    '    return "billing" if state.topic.lower() == "billing" else "queue"',
                    """%%graph support --max-steps 10
START -> read_ticket -> triage
triage -> page_oncall | billing | queue via triage_route
page_oncall -> END
billing -> END
queue -> END""",
                ),
            ),
        ),
    ),
]
