"""What every framework's d2l stand-in shares: Timer and Benchmark."""
import time


class Timer:
    """d2l.Timer: start(), stop() -> seconds, and the sum and list of the times."""

    def __init__(self):
        self.times = []
        self.start()

    def start(self):
        """Start the clock."""
        self.tik = time.time()

    def stop(self):
        """Stop the clock; the seconds since start(), also kept in self.times."""
        self.times.append(time.time() - self.tik)
        return self.times[-1]

    def avg(self):
        """The mean of the times."""
        return sum(self.times) / len(self.times)

    def sum(self):
        """The sum of the times."""
        return sum(self.times)


class Benchmark:
    """d2l.Benchmark: `with Benchmark('numpy'):` prints 'numpy: 0.6700 sec'."""

    def __init__(self, description="Done"):
        self.description = description

    def __enter__(self):
        self.timer = Timer()
        return self

    def __exit__(self, *args):
        print(f"{self.description}: {self.timer.stop():.4f} sec")
