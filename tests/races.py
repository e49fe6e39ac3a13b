"""Requests started together: how the race tests make two writers meet."""
import threading

import requests


def together(*calls):
    """Run ``call(client)`` for each call at once (a barrier releases them together), each with its own
    HTTP connection; their answers, in order."""
    barrier = threading.Barrier(len(calls))
    answers = [None] * len(calls)

    def run(index, call):
        with requests.Session() as client:
            barrier.wait()
            answers[index] = call(client)

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return answers
