"""asyncmlp for Python: every op is queued to its device's worker and the
call returns at once; wait_to_read(), waitall(), asnumpy(), item() and
printing a tensor are the blockers (framework/asyncmlp.h, docs/design.md).

    import asyncmlp as am
    x = am.ones((1000, 1000), device=am.cpu())
    y = am.dot(x, x)          # queued
    y.wait_to_read()          # the wait
"""
from ._asyncmlp import *  # noqa: F401,F403
from ._asyncmlp import __doc__, __version__  # noqa: F401
