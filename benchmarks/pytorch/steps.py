"""steps.py - what the training-step timers (convblock_train.py,
penalty_train.py) share: a step run a few times to warm up, then timed."""
import time


def time_steps(step, reps, warm=3):
    """The sorted wall ms of reps calls of step() after warm untimed ones."""
    for _ in range(warm):
        step()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        ts.append((time.perf_counter() - t0) * 1e3)
    return sorted(ts)
