"""Tutorial 10, a LangGraph thread's review answered again, in a fork.

The answers answer the fork's pauses from code (nobody clicks here) and show no view.
"""

from checkbank import Answer, Exercise

_FORK_AND_ANSWER = """
async def answer_again(app, config):
    fork = nlg.fork(app, config, step={step}, display=False)
    for answer in {answers}:
        await fork.next_pause()
        fork.answer(answer)
    return await fork
"""

_LESSON_THREAD = """
config = {"configurable": {"thread_id": "lisbon"}}
await app.ainvoke(TRIP, config)
await app.ainvoke(Command(resume="send"), config)
"""

EXERCISES = [
    Exercise(
        lesson="10-langgraph.ipynb",
        heading="## Exercise: answer the review again, in a fork",
        check='course.verdict(await exercise_problems(), "review asked again, and the thread ends with the rewrite.")',
        wrong=(
            Answer(
                "a new input to the same thread instead of a fork: the graph starts again from START",
                (
                    """
async def answer_again(app, config):
    run = nlg.start(app, {"messages": [("user", "Shorter, please.")]}, config, display=False)
    await run.next_pause()
    run.answer("send")
    return await run
""",
                ),
                says="plan ran again: a new input starts from START; fork from the checkpoint after a step",
            ),
            Answer(
                "forks after step 2, as the lesson's fork did: write writes the long answer again first",
                (_FORK_AND_ANSWER.format(step=2, answers='("rewrite", "send")'),),
                says="write ran 2 times: fork after the step where write ran",
            ),
            Answer(
                "forks after step 4, where review has already answered: nothing is left to run",
                (_FORK_AND_ANSWER.format(step=4, answers='("rewrite", "send")'),),
                says="review did not ask again: fork at a step before review ran",
            ),
            Answer(
                "forks at the right step but answers send again",
                (_FORK_AND_ANSWER.format(step=3, answers='("send",)'),),
                says="write did not run again: answer review 'rewrite' this time",
            ),
            Answer(
                "hard-codes the short answer into the thread's state",
                (
                    """
async def answer_again(app, config):
    app.update_state(config, {"messages": [AIMessage(content=SHORT)]})
""",
                ),
                says="the short answer is in the thread, but write did not write it",
            ),
            Answer(
                "forks the lesson's own thread, not the one it is given",
                (
                    _LESSON_THREAD,
                    """
async def answer_again(app, thread):
    fork = nlg.fork(app, config, step=3, display=False)
    for answer in ("rewrite", "send"):
        await fork.next_pause()
        fork.answer(answer)
    return await fork
""",
                ),
                says="answer_again ran nodes, but not on the thread it was given",
            ),
            Answer(
                "the stub: nothing done yet",
                ("async def answer_again(app, config):\n    pass",),
                says="answer_again left the thread as it was: fork it",
            ),
        ),
        right=(
            Answer(
                "forks after review (step 4) with the rewrite request as the update, and answers send once",
                (
                    """
async def answer_again(app, config):
    fork = nlg.fork(app, config, step=4, update={"messages": [("user", "Shorter, please.")]}, display=False)
    await fork.next_pause()
    fork.answer("send")
    await fork
""",
                ),
            ),
            Answer(
                "LangGraph alone: invoke from the checkpoint before review, then resume twice",
                (
                    """
async def answer_again(app, config):
    history = [snapshot async for snapshot in app.aget_state_history(config)]
    before_review = next(snapshot for snapshot in history if snapshot.next == ("review",))
    await app.ainvoke(None, before_review.config)  # review asks again
    await app.ainvoke(Command(resume="rewrite"), config)
    await app.ainvoke(Command(resume="send"), config)
""",
                ),
            ),
        ),
    ),
]
