"""Tutorial 12, a grader for what is safe and pass rates by kind of message."""

from checkbank import Answer, Exercise

EXERCISES = [
    Exercise(
        lesson="12-grading-samples.ipynb",
        heading="## Exercise 1: a grader for what is safe",
        check="course.verdict(exercise_1_problems(), \"safe passes the right readings and 'other', and fails every "
        'other guess.")',
        wrong=(
            Answer(
                "only the right reading passed: the code grader again",
                ('def safe(sample):\n    return sample.state.intent == CASES[sample.input_id]["label"]',),
                says="safe failed the reading 'other', which hands the message to a person: that is safe",
            ),
            Answer(
                "'other' alone passed, the right reading forgotten",
                ('def safe(sample):\n    return sample.state.intent == "other"',),
                says="safe failed the right reading 'refund': the label is safe",
            ),
            Answer(
                "'where' taken for safe too, since it pays nothing",
                (
                    'def safe(sample):\n    return sample.state.intent in (CASES[sample.input_id]["label"], "other", "where")',
                ),
                says="safe passed the reading 'where' of a message labelled 'refund': a wrong 'where' acts on a guess",
            ),
            Answer(
                "the reading returned instead of a verdict",
                ("def safe(sample):\n    return sample.state.intent",),
                says="safe returned 'refund', not True or False: a grader says whether the sample passed",
            ),
            Answer(
                "the label looked up by the input itself, not by its id",
                ('def safe(sample):\n    return sample.state.intent in (CASES[sample.input]["label"], "other")',),
                says="safe could not grade: the grader failed on input 'plain-1042', sample 0: TypeError: "
                "unhashable type: 'dict'",
            ),
        ),
        right=(
            Answer(
                "a Verdict with the reason, the reading tested twice",
                (
                    """def safe(sample):
    reading, label = sample.state.intent, CASES[sample.input_id]["label"]
    return Verdict(reading == label or reading == "other", f"read {reading!r}, labelled {label!r}")""",
                ),
            ),
            Answer(
                "the answer's text read again, and the check's own copy of the labels",
                (
                    """def safe(sample):
    reading = sample.answer.strip().strip(".").lower()
    return reading in (course.triage_cases()[sample.input_id]["label"], "other")""",
                ),
            ),
        ),
    ),
    Exercise(
        lesson="12-grading-samples.ipynb",
        heading="## Exercise 2: pass rates by kind of message",
        check="course.verdict(exercise_2_problems(), \"by_way pools each kind's samples, and its intervals tell the "
        'kinds apart.")',
        wrong=(
            Answer(
                "the order number taken for the way: the id's part after '-'",
                (
                    """def by_way(evaluation):
    passed, samples = Counter(), Counter()
    for graded in evaluation.graded:
        way = graded.input_id.split("-")[1]
        passed[way] += graded.passed
        samples[way] += 1
    return {way: (passed[way], samples[way], *wilson(passed[way], samples[way])) for way in samples}""",
                ),
                says="by_way gave ['1042', '1043', '1044', '1045', '2001', '2002'] for the 150 samples graded by "
                "their labels; expected a dict with the ways ['gift', 'late', 'plain', 'vague', 'where']",
            ),
            Answer(
                "messages counted, not samples: a message passes when all three samples did",
                (
                    """def by_way(evaluation):
    passed, samples = Counter(), Counter()
    for score in evaluation.scores:
        way = score.input_id.split("-")[0]
        passed[way] += score.passed == score.samples
        samples[way] += 1
    return {way: (passed[way], samples[way], *wilson(passed[way], samples[way])) for way in samples}""",
                ),
                says="by_way counted 10 passed of 10 samples for 'plain' in the 150 samples graded by their labels; "
                "30 of its 30 samples passed",
            ),
            Answer(
                "the rate given to wilson instead of the count of passes",
                (
                    """def by_way(evaluation):
    passed, samples = Counter(), Counter()
    for graded in evaluation.graded:
        way = graded.input_id.split("-")[0]
        passed[way] += graded.passed
        samples[way] += 1
    return {way: (passed[way], samples[way], *wilson(passed[way] / samples[way], samples[way])) for way in samples}""",
                ),
                says="by_way gave 'plain' the interval [0.01, 0.17] in the 150 samples graded by their labels; "
                "wilson(30, 30) is [0.89, 1.00]",
            ),
            Answer(
                "the rate instead of the interval",
                (
                    """def by_way(evaluation):
    passed, samples = Counter(), Counter()
    for graded in evaluation.graded:
        way = graded.input_id.split("-")[0]
        passed[way] += graded.passed
        samples[way] += 1
    return {way: (passed[way], samples[way], passed[way] / samples[way]) for way in samples}""",
                ),
                says="by_way gave (30, 30, 1.0) for 'plain'; expected four numbers: (passed, samples, low, high)",
            ),
        ),
        right=(
            Answer(
                "each message's score summed per way",
                (
                    """def by_way(evaluation):
    passed, samples = Counter(), Counter()
    for score in evaluation.scores:
        passed[score.input_id.split("-")[0]] += score.passed
        samples[score.input_id.split("-")[0]] += score.samples
    return {way: (passed[way], samples[way], *wilson(passed[way], samples[way])) for way in samples}""",
                ),
            ),
            Answer(
                "a dict of pairs, partition for the way",
                (
                    """def by_way(evaluation):
    found = {}
    for graded in evaluation.graded:
        way = graded.input_id.partition("-")[0]
        passed, samples = found.get(way, (0, 0))
        found[way] = (passed + int(graded.passed), samples + 1)
    return {way: (p, n, *wilson(p, n)) for way, (p, n) in found.items()}""",
                ),
            ),
        ),
    ),
]
