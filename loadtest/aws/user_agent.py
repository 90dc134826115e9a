"""The User-Agent header of loadtest's own AWS clients, built once per distinct input.

botocore rebuilds a request's User-Agent string twice per call (when it serialises the
request, and again when the request is created), from some twenty components that are
each sanitised character by character: about a fifth of a call's CPU in a profile of
the harness on the embedded backend. The string depends only on the client (its
session, its config and the features it registered), on the features the call itself
registered (retry mode, paginators, ...: ``botocore.context``'s ``features``) and on
botocore's ``modify_components`` hook; ``memoise_user_agent`` makes a client keep the
string it built for each such input and hand it out again, so every request still
carries exactly the header botocore would have built.

Owns that memo; must not change what a header says, nor touch clients other than those
``loadtest.aws.clients.clients`` makes for loadtest's own calls and, in ``explore`` (whose
time is virtual: a call's CPU is never measured there), the handler's. A load run leaves
the handler's clients exactly as costly as on Lambda.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore import useragent
from botocore.context import get_context

MEMO_MAX = 64
"""Distinct (client features, call features, components hook) inputs kept per client; more
clears the memo (a run's calls use a handful)."""


class UserAgentMemo:
    """A client's ``to_string``, answering from a memo keyed by the features in play."""

    def __init__(self, creator: Any, build: Callable[[], str]) -> None:
        self._creator = creator
        self._build = build
        self._strings: dict[tuple[frozenset[str], frozenset[str], object], str] = {}

    def __call__(self) -> str:
        context = get_context()
        key = (
            frozenset(self._creator._client_features or ()),
            frozenset(context.features) if context is not None else frozenset(),
            useragent.modify_components,  # botocore's hook for rewriting the components
        )
        text = self._strings.get(key)
        if text is None:
            if len(self._strings) >= MEMO_MAX:
                self._strings.clear()
            text = self._strings[key] = self._build()
        return text


def memoise_user_agent(client: Any) -> None:
    """Make ``client`` (a botocore or aiobotocore client) reuse its User-Agent strings.

    Both places botocore builds the header call the client's ``UserAgentString``'s
    ``to_string`` through the object, so an instance attribute answers both. A client
    without one (another botocore) is left as it is.
    """
    creator: Any = getattr(client, "_user_agent_creator", None)
    build = getattr(creator, "to_string", None)
    if build is None or isinstance(build, UserAgentMemo):
        return
    if not hasattr(creator, "_client_features"):
        return
    creator.to_string = UserAgentMemo(creator, build)
