# Client options as a user writes them; checked by mypy --strict and pyright strict
# (tests/typing/test_options.py). Lines marked `# error:` must be mypy errors.
from typing_extensions import assert_type

from workers_ai import AsyncWorkersAI, ClientOptions, WorkersAI

ai = WorkersAI(account_id="a" * 32, api_token="t", timeout=5.0, max_retries=4)
assert_type(ai.options, ClientOptions)
assert_type(ai.options.timeout, float)
assert_type(ai.options.max_retries, int)
quick = ai.with_options(timeout=1.0, max_retries=0)
assert_type(quick, WorkersAI)

aio = AsyncWorkersAI(account_id="a" * 32, api_token="t", rate_limit=None)
assert_type(aio.options, ClientOptions)
assert_type(aio.with_options(base_url="http://127.0.0.1:1/client/v4"), AsyncWorkersAI)


def negative() -> None:
    WorkersAI(retries=3)  # error: unknown keyword
    ai.with_options(retries=3)  # error: unknown keyword
    ai.with_options(timeout="5")  # error: wrong type
    ai.options.timeout = 3.0  # error: frozen
