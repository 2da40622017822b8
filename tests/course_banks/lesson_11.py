"""Tutorial 11, reading the order number as customers write it."""

from checkbank import Answer, Exercise

_GRAPH = """%%graph returns_desk --max-steps 10
START -> read_order
read_order -> ask_order  if not state.order_id
read_order -> look_up
ask_order -> look_up
look_up -> refuse        if state.too_old
look_up -> big_refund    if state.amount > 100
look_up -> refund
big_refund [approval=before, on_deny=hand_over] -> END
refund -> END
refuse -> END
hand_over -> END"""

_KNOWN_MESSAGES = """
KNOWN = {case["message"]: case["order"] for case in CASES.values() if "ask_order" not in case["route"]}

def read_order(state):
    return {"order_id": KNOWN.get(state.message, "")}
"""

_TWO_PATTERNS = r"""
HASH = re.compile(r"#(\d{4})")
WORD = re.compile(r"\border\s+(\d{4})", re.IGNORECASE)

def number_in(text):
    found = HASH.search(text) or WORD.search(text)
    return found.group(1) if found else ""
"""

EXERCISES = [
    Exercise(
        lesson="11-evaluating-an-agent.ipynb",
        heading="## Exercise: read the number as customers write it",
        check='course.verdict(exercise_problems(), "the desk reads the order number however the customer writes it.")',
        wrong=(
            Answer(
                "the '#' made optional: any four digits are read, a phone number's 0800 too",
                (r'ORDER_NUMBER = re.compile(r"#?(\d{4})")',),
                says="ORDER_NUMBER read '0800', four digits that are no order number",
            ),
            Answer(
                "the way in captured too: the first group is '#' or 'order ', not the digits",
                (r'ORDER_NUMBER = re.compile(r"(#|\border\s+)(\d{4})", re.IGNORECASE)',),
                says="number_in took '#' for the order number: it returns ORDER_NUMBER's first group",
            ),
            Answer(
                "the labels rewritten to the desk's routes instead of the desk fixed",
                (
                    """def label(text, order):
    asks = ["ask_order"] if "#" not in text.format(order) else []
    return {"message": text.format(order), "order": order, "route": ("read_order", *asks, "look_up", *ENDING[order])}

CASES = {f"{way}-{order}": label(text, order) for way, text in WAYS.items() for order in ORDERS}""",
                ),
                says="CASES has other labels than the lesson's for 20 cases (e.g. word-1042): a label is fixed before "
                "the agent runs, and the check reads its own copy; fix the desk, not the labels",
            ),
            Answer(
                "the two phrasings of the fifty written into the pattern: 'my order 1043' is still asked for",
                (r'ORDER_NUMBER = re.compile(r"(?:#|return order |Order )(\d{4})")',),
                says="4 of 57 messages (4 of them held out), e.g. 'Wrong item in my order 2003.': the desk asked for the "
                "number given after 'order' (in any case)",
            ),
            Answer(
                "'order' and 'Order' only: 'ORDER 2002' is still asked for",
                (r'ORDER_NUMBER = re.compile(r"(?:#|[Oo]rder\s+)(\d{4})")',),
                says="e.g. 'ORDER 2002 arrived in pieces.': the desk asked for the number given after 'order' (in any case)",
            ),
            Answer(
                "the fifty messages looked up by heart in read_order, the graph cell run again",
                (_KNOWN_MESSAGES, _GRAPH),
                says="e.g. 'The order arrived broken: #1042.': the desk asked for the number given after '#': "
                "read_order should find it with ORDER_NUMBER",
            ),
            Answer(
                "two groups, one per way in: for 'order 1042' the first group is empty",
                (r'ORDER_NUMBER = re.compile(r"#(\d{4})|order\s+(\d{4})", re.IGNORECASE)',),
                says="24 of 57 messages (4 of them held out), e.g. 'Wrong item in my order 2003.': the desk asked for "
                "the number given after 'order' (in any case): read_order should find it with ORDER_NUMBER, in its first group",
            ),
        ),
        right=(
            Answer("number_in rewritten with a pattern per way in, tried in turn", (_TWO_PATTERNS,)),
            Answer(
                "letter classes instead of a flag, and spaces only",
                (r'ORDER_NUMBER = re.compile(r"(?:#|[Oo][Rr][Dd][Ee][Rr] +)([0-9]{4})")',),
            ),
            Answer(
                "an inline (?i) flag, and 'order' with or without a space",
                (r'ORDER_NUMBER = re.compile(r"(?i)(?:#|order\s*)(\d{4})")',),
            ),
        ),
    ),
]
