"""The capstone, a returns desk built in three milestones; the last one's check is the whole brief."""

from checkbank import Answer, Exercise

LESSON = "09-capstone.ipynb"

# -- the nodes, as a learner writes them ------------------------------------------------------

_READ = """
def read_order(state):
    found = ORDER_NUMBER.search(state.message)
    return {"order_id": found.group(1) if found else ""}
"""
_ASK = """
async def ask_order(state, ctx):
    found = ORDER_NUMBER.search(await ctx.request_input("Which order?"))
    return {"order_id": found.group(1) if found else ""}
"""
_LOOK_UP = """
def look_up(state):
    order = find_order(state.order_id)
    return {"amount": order["amount"], "too_old": order["days_since_delivery"] > 30}
"""
_FIND = _READ + _ASK + _LOOK_UP

_REFUSE = """
def refuse(state):
    return {"refunded": 0, "reply": f"Order #{state.order_id} is over 30 days old."}
"""
_REFUND = """
def refund(state):
    pay_refund(state.order_id, state.amount)
    return {"refunded": state.amount, "reply": f"Refunded order #{state.order_id}."}
"""
_ENDS = _REFUSE + _REFUND

_HAND_OVER = """
def hand_over(state):
    return {"refunded": 0, "handed_to_person": True, "reply": f"A colleague takes order #{state.order_id}."}
"""
_GATE = _HAND_OVER + "\nbig_refund = refund\n"
_DESK = _FIND + _ENDS + _GATE

# -- the graphs, milestone by milestone ---------------------------------------------------------

_FOUND = """%%graph returns_desk --max-steps 10
START -> read_order
read_order -> ask_order  if not state.order_id
read_order -> look_up
ask_order -> look_up
"""
_FIND_GRAPH = _FOUND + "look_up -> END"
_ENDS_EDGES = """look_up -> refuse  if state.too_old
look_up -> refund
refuse -> END
refund -> END"""
_ENDS_GRAPH = _FOUND + _ENDS_EDGES
_DESK_EDGES = """look_up -> refuse        if state.too_old
look_up -> big_refund    if state.amount > 100
look_up -> refund
big_refund [{gate}] -> END
refund -> END
refuse -> END
hand_over -> END"""
_DESK_GRAPH = _FOUND + _DESK_EDGES
_WHOLE_DESK = (_DESK, _DESK_GRAPH.format(gate="approval=before, on_deny=hand_over"))

# A typed state and the Python builder API, not the solution's dict state and %%graph cell.
_TYPED = """
import pydantic
from nbgraph import END, START, Graph

class Desk(pydantic.BaseModel):
    message: str
    order_id: str = ""
    amount: float = 0
    too_old: bool = False
    reply: str = ""
    refunded: float = 0
    handed_to_person: bool = False
"""

# A router picks the end: refusal, manager, or refund, in one function.
_ROUTER_DESK_GRAPH = """%%graph returns_desk --max-steps 10
START -> read_order
read_order -> ask_order  if not state.order_id
read_order -> look_up
ask_order -> look_up
look_up -> refuse | big_refund | refund via decide
big_refund [approval=before, on_deny=hand_over] -> END
refund -> END
refuse -> END
hand_over -> END"""
_DECIDE = """
def decide(state):
    if state.too_old:
        return "refuse"
    return "big_refund" if state.amount > 100 else "refund"
"""

EXERCISES = [
    Exercise(
        lesson=LESSON,
        heading="## Milestone 1: find the order",
        check='course.verdict(capstone_problems(1), "returns_desk finds the order, asking for its number if need be.")',
        wrong=(
            Answer(
                "`match` instead of `search`: a number not at the message's start is missed",
                (_FIND.replace("ORDER_NUMBER.search(state.message)", "ORDER_NUMBER.match(state.message)"), _FIND_GRAPH),
                says="order_id is ''; expected '1042', the four digits after the #, found anywhere in the message",
            ),
            Answer(
                "any four digits taken for the order number, a phone number's too: no `#` in the pattern",
                ('ORDER_NUMBER = re.compile(r"(\\d{4})")\n' + _FIND, _FIND_GRAPH),
                says="'Call me on 0800 5551 about #1042.' (read_order): the run failed: node 'look_up' failed at step 2: "
                "KeyError: '0800'",
            ),
            Answer(
                "look_up reads a field the orders do not have: the node's own error comes first",
                (_FIND.replace('order["amount"]', 'order["price"]'), _FIND_GRAPH),
                says="'Please refund #1042, it arrived broken.' (read_order): the run failed: node 'look_up' failed",
            ),
            Answer(
                "group(0) keeps the # with the digits, which find_order does not know",
                (_FIND.replace("group(1)", "group(0)"), _FIND_GRAPH),
                says="order_id is '#1042'; expected '1042'",
            ),
            Answer(
                "a plain question: ask_order writes it as a reply and the run ends there, never waiting",
                (
                    _READ + _LOOK_UP + '\ndef ask_order(state):\n    return {"reply": "Which order is it about?"}\n',
                    _FIND_GRAPH.replace("ask_order -> look_up", "ask_order -> END"),
                ),
                says="expected ['input']; ask with `await ctx.request_input(...)` in an async node",
            ),
            Answer(
                "request_input called without await: the node gets a coroutine, not the answer",
                (_FIND.replace("await ctx.request_input", "ctx.request_input"), _FIND_GRAPH),
                says="it paused for nothing; expected ['input']; ask with `await ctx.request_input(...)`",
            ),
            Answer(
                "every customer is asked, even one whose message has the number",
                (_FIND, _FIND_GRAPH.replace("if not state.order_id\nread_order -> look_up", "")),
                says="it paused for ['input at ask_order']; expected no pause; ask with `await ctx.request_input(...)` in an async node, and only when there is no order_id",
            ),
            Answer(
                "look_up reads the order from the message instead of order_id",
                (_FIND.replace("find_order(state.order_id)", "find_order(state.message)"), _FIND_GRAPH),
                says="amount is None; expected 40: look_up keeps find_order's amount",
            ),
            Answer(
                "no --max-steps: the default of 50 steps",
                (_FIND, _FIND_GRAPH.replace(" --max-steps 10", "")),
                says="returns_desk allows 50 steps; the brief says at most 10",
            ),
        ),
        right=(
            Answer(
                "a typed state and the Python builder API",
                (
                    _TYPED + _FIND,
                    """returns_desk = Graph("returns_desk", state=Desk, max_steps=10)
for node in (read_order, ask_order, look_up):
    returns_desk.add_node(node.__name__, node)
returns_desk.add_edge(START, "read_order")
returns_desk.add_edge("read_order", "ask_order", when=lambda s: not s.order_id)
returns_desk.add_edge("read_order", "look_up")
returns_desk.add_edge("ask_order", "look_up")
returns_desk.add_edge("look_up", END)""",
                ),
            ),
            Answer(
                "a synchronous ask_order with ctx.ask, a regex of its own, and a router after read_order",
                (
                    """import re

def read_order(state):
    digits = re.findall(r"#(\\d{4})", state.message)
    return {"order_id": digits[0] if digits else ""}

def ask_order(state, ctx):
    digits = re.findall(r"\\d{4}", ctx.ask("Your order number, please?"))
    return {"order_id": digits[0] if digits else ""}

def has_number(state):
    return "look_up" if state.order_id else "ask_order"
"""
                    + _LOOK_UP,
                    """%%graph returns_desk --max-steps 8
START -> read_order
read_order -> look_up | ask_order via has_number
ask_order -> look_up
look_up -> END""",
                ),
            ),
            Answer("the whole desk, as later milestones grow it, still passes this check", _WHOLE_DESK),
        ),
    ),
    Exercise(
        lesson=LESSON,
        heading="## Milestone 2: refuse old orders, refund the others",
        check='course.verdict(capstone_problems(2), "returns_desk refuses old orders and refunds the others.")',
        wrong=(
            Answer(
                "the age test turned round: the old order is refunded, the new ones refused",
                (_FIND + _ENDS, _ENDS_GRAPH.replace("if state.too_old", "if not state.too_old")),
                says="'Return #3003 please.' (read_order -> look_up -> refund): pay_refund paid [60.0]; expected no payment",
            ),
            Answer(
                "the reply names the order without its #",
                (_FIND + _ENDS.replace("order #{state.order_id}", "order {state.order_id}"), _ENDS_GRAPH),
                says="refund's reply 'Refunded order 1042.' does not name #1042",
            ),
            Answer(
                "refuse leaves refunded unset",
                (_FIND + _ENDS.replace('{"refunded": 0, "reply"', '{"reply"'), _ENDS_GRAPH),
                says="'Return #3003 please.' (read_order -> look_up -> refuse): refunded is None after refuse; expected 0",
            ),
            Answer(
                "the refusal does not say why",
                (_FIND + _ENDS.replace("is over 30 days old.", "cannot be refunded."), _ENDS_GRAPH),
                says="refuse's reply is a refusal, and should say '30 days'",
            ),
        ),
        right=(
            Answer(
                "a router that reads the days itself; look_up keeps them, not a flag",
                (
                    _READ
                    + _ASK
                    + _ENDS
                    + """
def look_up(state):
    order = find_order(state.order_id)
    return {"amount": order["amount"], "days": order["days_since_delivery"]}

def old_or_not(state):
    return "refuse" if state.days > 30 else "refund"
""",
                    _FOUND
                    + """look_up -> refuse | refund via old_or_not
refuse -> END
refund -> END""",
                ),
            ),
            Answer(
                "a typed state, and ends that say more",
                (
                    _TYPED + _FIND + _ENDS.replace("Refunded order", "We refund 40.00 € of order"),
                    _ENDS_GRAPH.replace("--max-steps 10", "--state Desk --max-steps 10"),
                ),
            ),
            Answer("the whole desk, with the manager's gate, still passes this check", _WHOLE_DESK),
        ),
    ),
    Exercise(
        lesson=LESSON,
        heading="## Milestone 3: the manager's gate, and the whole brief",
        check='course.verdict(capstone_problems(), "the returns desk meets the brief. Well done!")',
        wrong=(
            Answer(
                "the manager asked after the refund was paid: `[approval]` on the node that pays",
                (_DESK, _DESK_GRAPH.format(gate="approval, on_deny=hand_over")),
                says=(
                    "'Refund #2001 please.' (read_order -> look_up -> big_refund): when the manager was asked, there was "
                    "already {'REFUNDS': [('2001', 200.0)], "
                    "'reply': 'Refunded order #2001.', 'refunded': 200.0}; the manager decides before anything is paid"
                ),
            ),
            Answer(
                "`[approval]` alone on the node that pays: the manager is asked too late, and a denial ends the run",
                (_DESK, _DESK_GRAPH.format(gate="approval")),
                says="'Refund #2001, it does not fit.' (read_order -> look_up -> big_refund): pay_refund paid [200.0]; expected no payment",
            ),
            Answer(
                "no on_deny: a denial ends the run, and nobody takes the case",
                (_DESK, _DESK_GRAPH.format(gate="approval=before")),
                says="the run ended 'denied' (approval before 'big_refund' was denied; it did not run): give the gated node `on_deny=`",
            ),
            Answer(
                "every refund waits for the manager, not only those over 100 €",
                (
                    _FIND + _ENDS + _HAND_OVER,
                    _FOUND
                    + """look_up -> refuse  if state.too_old
look_up -> refund
refund [approval=before, on_deny=hand_over] -> END
refuse -> END
hand_over -> END""",
                ),
                says="'Please refund #1042, it arrived broken.' (read_order -> look_up): it paused for ['approval at refund']; expected no pause; only a refund over 100 €",
            ),
            Answer(
                "hand_over forgets to say the case went to a person",
                (_DESK.replace('"handed_to_person": True, ', ""), _WHOLE_DESK[1]),
                says="handed_to_person is None after hand_over; expected True",
            ),
            Answer(
                "the manager asked from 100 € on, not over 100 €: the 100 € kettle waits too",
                (_DESK, _WHOLE_DESK[1].replace("if state.amount > 100", "if state.amount >= 100")),
                says="'Refund #1044, a 100 € kettle.' (read_order -> look_up): it paused for ['approval at big_refund']; "
                "expected no pause",
            ),
            Answer(
                "the step limit raised to 20",
                (_DESK, _WHOLE_DESK[1].replace("--max-steps 10", "--max-steps 20")),
                says="returns_desk allows 20 steps; the brief says at most 10",
            ),
        ),
        right=(
            Answer(
                "a typed state, the Python API, and a `manager` node that does nothing, approved after it ran, "
                "before the node that pays: nothing is paid or written when the manager is asked",
                (
                    _TYPED + _FIND + _ENDS + _HAND_OVER,
                    """def manager(state):
    return None

returns_desk = Graph("returns_desk", state=Desk, max_steps=10)
for node in (read_order, ask_order, look_up, refuse, refund, hand_over):
    returns_desk.add_node(node.__name__, node)
returns_desk.add_node("manager", manager, approval=True, on_deny="hand_over")
returns_desk.add_edge(START, "read_order")
returns_desk.add_edge("read_order", "ask_order", when=lambda s: not s.order_id)
returns_desk.add_edge("read_order", "look_up")
returns_desk.add_edge("ask_order", "look_up")
returns_desk.add_edge("look_up", "refuse", when=lambda s: s.too_old)
returns_desk.add_edge("look_up", "manager", when=lambda s: s.amount > 100)
returns_desk.add_edge("look_up", "refund")
returns_desk.add_edge("manager", "refund")
for name in ("refuse", "refund", "hand_over"):
    returns_desk.add_edge(name, END)""",
                ),
            ),
            Answer("a router picks refusal, manager or refund", (_DESK + _DECIDE, _ROUTER_DESK_GRAPH)),
        ),
    ),
]
