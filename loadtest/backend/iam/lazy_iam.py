"""moto's IAM bookkeeping on every request, left out until something has loaded moto's IAM.

Owns the replacements ``loadtest.backend.patches`` installs for moto's
``BaseResponse.setup_class``, ``BaseResponse.get_current_account`` and
``ActionAuthenticatorMixin._authenticate_and_authorize_normal_action``: moto 5.2.5's own
code, except that IAM is consulted only once ``moto.iam.models`` has been imported.

Why: on every request, whatever the service, moto imports ``moto.iam.models`` to find the
account an access key belongs to and to note the key's last use, and imports
``moto.iam.access_control`` before it checks whether access control is on at all (it is
off unless ``INITIAL_NO_AUTH_ACTION_COUNT`` is set). Those imports bring moto's IAM, S3,
STS, EventBridge and CloudWatch models, a 4.7 MB module of AWS managed policies and
cryptography's X.509 bindings into a process that serves DynamoDB and SQS: measured in
process, 7.9 MB of the backend's heap and 13.4 MB of its resident memory before the first
message.

Why it answers the same: an access key moto knows is one created through moto's IAM (or
STS, which uses it), and any such call imports ``moto.iam.models``. Until then no key
exists, so moto would answer ``DEFAULT_ACCOUNT_ID`` for every key and note no last use;
that is what these answer. From the moment ``moto.iam.models`` is imported (by whatever
request or code), they do exactly what moto does. With access control on
(``INITIAL_NO_AUTH_ACTION_COUNT``), the check runs as moto's does; before it is due, it
only counts the request, as moto's does. The one difference: moto created the account's
(empty) IAM backend on the first request of any service; it is now created on the first
call that uses IAM.

Must not touch anything else ``setup_class`` does: it is moto's, line for line, up to
the IAM step, but for the request URL's ``urlparse``, remembered per URL (the same
immutable result; ~1% of a conditional ``PutItem``'s CPU). ``MIRRORED_SOURCES`` pins the moto source these mirror; ``patches`` installs
them only while the installed moto's source is that one. Installs nothing itself.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import ParseResult, parse_qs, parse_qsl, urlparse

from moto import settings
from moto.core.authorization import ActionAuthenticatorMixin
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.core.request import Request
from moto.core.responses import BaseResponse, _decode_dict
from moto.core.utils import utcnow
from moto.utilities.utils import get_partition
from werkzeug.http import http_date

from loadtest.backend.core.mirrors import mirrors

IAM_MODELS = "moto.iam.models"
"""The module whose import means moto's IAM may hold access keys."""

MIRRORED_SOURCES = {
    "BaseResponse.setup_class": (
        "0045fc77574abb17a3a09f5d6eddbf7713785ad7b348622f3a37162b1bebcab8"
    ),
    "BaseResponse.get_current_account": (
        "73816bc14741196009c56cf8e61bde229f02f83be0284a55aaa5342426612aa7"
    ),
    "ActionAuthenticatorMixin._authenticate_and_authorize_action": (
        "f8cfc0296ca017faca1c0cd574290bac2729e96d75265f75ebf6c2c97c10af45"
    ),
}
"""SHA-256 of the source (moto 5.2.5) of each moto function these mirror."""


def mirrors_installed_moto() -> bool:
    """Whether the installed moto's functions (behind any replacement installed, which
    names moto's as ``__wrapped__``) are the ones these mirror."""
    functions: dict[str, Callable[..., Any]] = {
        "BaseResponse.setup_class": BaseResponse.setup_class,
        "BaseResponse.get_current_account": BaseResponse.get_current_account,
        "ActionAuthenticatorMixin._authenticate_and_authorize_action": (
            ActionAuthenticatorMixin._authenticate_and_authorize_action
        ),
    }
    return all(mirrors(function, MIRRORED_SOURCES[name]) for name, function in functions.items())


@functools.lru_cache(maxsize=256)
def _parsed_url(full_url: str) -> ParseResult:
    """``urlparse(full_url)``, remembered: a run's requests go to one URL, and the
    result is an immutable tuple of strings."""
    return urlparse(full_url)


def iam_loaded() -> bool:
    """Whether moto's IAM models have been imported in this process."""
    return IAM_MODELS in sys.modules


def setup_class(
    self: Any,
    request: Request,
    full_url: str | None = None,
    headers: Any = None,
    use_raw_body: bool | None = None,
) -> None:
    """moto's ``BaseResponse.setup_class``; IAM notes the key's use only once loaded."""
    use_raw_body = self.use_raw_body if use_raw_body is None else use_raw_body
    self.is_werkzeug_request = request.from_wsgi_server
    full_url = request.raw_url if full_url is None else full_url
    headers = request.headers if headers is None else headers
    self.decompress_request_body(request)
    self.normalized_request = request
    self.parsed_url = _parsed_url(full_url) if type(full_url) is str else urlparse(full_url)
    querystring: dict[str, Any] = OrderedDict()
    self.body = request.data

    self.form_data = request.form
    for key, value in request.form.items():
        querystring[key] = [value]

    if "key" in request.form:
        if "file" in request.form:
            self.body = request.form["file"]
        else:
            form = request.form
            for k, _ in form.items():
                self.body = k
    if request.files:
        for _, uploaded in request.files.items():
            self.body = uploaded.stream.read()
            uploaded.stream.close()
        if querystring.get("key"):
            filename = os.path.basename(request.files["file"].filename or "")
            querystring["key"] = [querystring["key"][0].replace("${filename}", filename)]

    if hasattr(self.body, "read"):
        self.body = self.body.read()
    self.raw_body = self.body

    if isinstance(self.body, bytes) and not use_raw_body:
        self.body = self.body.decode("utf-8")

    if not querystring:
        querystring.update(parse_qs(self.parsed_url.query, keep_blank_values=True))
    if not querystring and self.body and not use_raw_body:
        # as moto: the body need not be a query string
        with contextlib.suppress(UnicodeEncodeError, UnicodeDecodeError, AttributeError):
            querystring.update(
                OrderedDict(
                    (key, [value]) for key, value in parse_qsl(self.body, keep_blank_values=True)
                )
            )
    if not querystring:
        querystring.update(headers)

    with contextlib.suppress(UnicodeDecodeError):  # as moto: nor decode
        querystring = _decode_dict(querystring)

    self.uri = full_url

    self.path = self.parsed_url.path
    self.raw_path = request.raw_path

    self.querystring = querystring
    self.data = querystring
    self.method = request.method
    self.region = self.get_region_from_url(request, full_url)
    self.partition = get_partition(self.region)
    self.uri_match = {}

    if "host" not in request.headers:
        request.environ["HTTP_HOST"] = self.parsed_url.netloc
    self.headers = request.headers
    self.response_headers = {"server": "amazon.com"}
    if not self.is_werkzeug_request:
        self.response_headers["date"] = http_date(utcnow())

    if self.automated_parameter_parsing and self._get_action():
        self.parse_parameters(request)

    self.access_key = self.get_access_key()
    self.current_account = self.get_current_account()
    if iam_loaded():
        from moto.iam.models import mark_account_as_visited

        mark_account_as_visited(
            account_id=self.current_account,
            access_key=self.access_key,
            service=self.service_name,
            region=self.region,
        )


setup_class.__wrapped__ = BaseResponse.setup_class  # type: ignore[attr-defined]


def get_current_account(self: Any) -> str:
    """moto's ``BaseResponse.get_current_account``; a key's account is looked up in IAM
    only once IAM is loaded (before, IAM holds no key: moto's default account)."""
    if "MOTO_ACCOUNT_ID" in os.environ:
        return os.environ["MOTO_ACCOUNT_ID"]
    if "x-moto-account-id" in self.headers:
        return str(self.headers["x-moto-account-id"])
    if not iam_loaded():
        return DEFAULT_ACCOUNT_ID
    from moto.iam.models import get_account_id_from

    return get_account_id_from(self.get_access_key())


get_current_account.__wrapped__ = BaseResponse.get_current_account  # type: ignore[attr-defined]


def authorize_when_due(
    authorize: Callable[[Any, str], None],
) -> Callable[[Any, str], None]:
    """moto's ``_authenticate_and_authorize_normal_action``: before access control is due,
    the request is only counted, as moto's check does, without importing IAM first."""

    def check(self: Any, resource: str = "*") -> None:
        if ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT:
            ActionAuthenticatorMixin.request_count += 1
            return
        authorize(self, resource)

    check.__wrapped__ = authorize  # type: ignore[attr-defined]
    return check
