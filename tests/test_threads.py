"""BLAS thread limits: one thread inside a fit's context, nested contexts free."""

import threading

from threadpoolctl import threadpool_info, threadpool_limits

from robustclust._core import threads


def blas_threads():
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


def test_single_blas_limits_once_and_nested_contexts_change_nothing(monkeypatch):
    calls = []
    real = threads.controller().limit

    def counting(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(threads.controller(), "limit", counting)
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with threads.single_blas():
            assert set(blas_threads()) <= {1}
            with threads.single_blas():
                with threads.single_blas():
                    assert set(blas_threads()) <= {1}
                assert set(blas_threads()) <= {1}   # an inner exit keeps the limit
            assert set(blas_threads()) <= {1}
        assert blas_threads() == before               # the outer exit restores it
        assert calls == [{"limits": 1, "user_api": "blas"}]
        # an error inside unwinds the depth: the next context limits again
        try:
            with threads.single_blas():
                raise RuntimeError
        except RuntimeError:
            pass
        assert blas_threads() == before
        with threads.single_blas():
            pass
        assert len(calls) == 3


def test_another_thread_limits_on_its_own():
    # the depth is per thread: a context opened on another thread while this
    # one holds the limit still enters its own (BLAS limits are process-wide)
    seen = []
    with threads.single_blas():
        def look():
            seen.append(getattr(threads._LOCAL, "depth", 0))

        worker = threading.Thread(target=look)
        worker.start()
        worker.join()
        assert threads._LOCAL.depth == 1
    assert seen == [0]
    assert threads._LOCAL.depth == 0
