"""Tutorial 7, a hotfix by fork, behind a gate: the check runs the learner's `release` from the
start and answers Deny (the run must pause before `deploy`, which never runs, and go on to `hold`),
then reads `hotfix`: a new thread, forked early enough that `build` ran on 1.0.1, approved."""

from checkbank import Answer, Exercise

_GATE = """%%graph release --max-steps 10
START -> build -> run_tests -> deploy [approval=before, on_deny=hold] -> END
hold -> END"""
_HOTFIX = """forked = release.invoke(Fork(done, step=0, update={"version": "1.0.1"}))
hotfix = release.invoke(Resume(forked, True))"""


def _gate(options: str, node: str = "deploy") -> str:
    """A `%%graph release` cell with ``options`` on ``node`` (and none on the other)."""
    chain = {
        "run_tests": f"START -> build -> run_tests {options} -> deploy -> END",
        "deploy": f"START -> build -> run_tests -> deploy {options} -> END",
    }[node]
    return f"%%graph release --max-steps 10\n{chain}\nhold -> END"


def _answer(why: str, *cells: str, says: str = "") -> Answer:
    return Answer(why, cells, says=says)


EXERCISES = [
    Exercise(
        lesson="07-stop-resume-fork.ipynb",
        heading="## Exercise: a hotfix by fork, behind a gate",
        check=(
            'course.verdict(exercise_problems(), "a denied deploy goes to hold; '
            '1.0.1 built, tested and deployed on a thread of its own.")'
        ),
        wrong=(
            _answer(
                "forked after step 1: build is reused, so the artifact is still 1.0's",
                _GATE,
                _HOTFIX.replace("step=0", "step=1"),
                says="fork after a step before build",
            ),
            _answer(
                "a new run of 1.0.1 instead of a fork of done: it starts from its own input, and goes to production",
                _GATE,
                'paused = release.invoke({"version": "1.0.1"})\nhotfix = release.invoke(Resume(paused, True))',
                says="a new run starts from its own input; fork done",
            ),
            _answer(
                "the fork kept where it paused, its deploy never approved",
                _GATE,
                'hotfix = release.invoke(Fork(done, step=0, update={"version": "1.0.1"}))',
                says="approve its deploy",
            ),
            _answer(
                "the hotfix answered Deny instead of Approve: it ends in hold",
                _GATE,
                _HOTFIX.replace("True", "False"),
                says="approve its deploy",
            ),
            _answer(
                "a new run on done's own thread instead of a fork: the original thread is written over",
                _GATE,
                'paused = release.invoke({"version": "1.0.1"}, thread=done.thread)\n'
                "hotfix = release.invoke(Resume(paused, True))",
                says="hotfix ran on done's own thread",
            ),
            _answer(
                "the gate after deploy: it has deployed by the time anyone says no",
                _gate("[approval, on_deny=hold]"),
                _HOTFIX,
                says="release paused after 'deploy'; gate deploy before it runs",
            ),
            _answer(
                "release left as it was: a denial ends the run instead of going to hold",
                _HOTFIX,
                says="send it to hold: `on_deny=hold`",
            ),
            _answer(
                "the gate on the wrong node: run_tests is gated and deploy runs unasked",
                _gate("[approval=before, on_deny=hold]", node="run_tests"),
                _HOTFIX,
                says="release paused before 'run_tests'",
            ),
            _answer(
                "on_deny=END: the denial goes nowhere that says so",
                _gate("[approval=before, on_deny=END]"),
                _HOTFIX,
                says="send it to hold",
            ),
        ),
        right=(
            _answer(
                "release replaced by the Python-built graph, which has the gate already", "release = fresh", _HOTFIX
            ),
            _answer(
                "forked first, on a thread named by hand and resumed by its id; the gate written after",
                'release.invoke(Fork(done, step=0, update={"version": "1.0.1"}, thread="hotfix-1.0.1"))\n'
                'hotfix = release.invoke(Resume("hotfix-1.0.1", True))',
                _GATE,
            ),
            _answer(
                "a hold of its own that also says which version waits",
                'def hold(state):\n    return {"held": f"{state.version} waits for a yes"}',
                _GATE,
                _HOTFIX,
            ),
        ),
    ),
]
