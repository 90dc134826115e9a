"""The compact stand-in for moto's SQS ``Message`` that every queue stores.

Owns ``CompactMessage`` (what ``loadtest.backend.patches`` installs as
``moto.sqs.models.Message``, the class ``SQSBackend.send_message`` instantiates) and
``label_batch``, the wrapper of ``SQSBackend.send_message_batch`` that keeps the batch entry
ids off the stored messages. Must not change anything a client can observe: every field
moto's responses read has the value moto's ``Message`` would hold, and the MD5s, receipt
handles and visibility come from moto's own code.

Why: in a burst every message waits in the queue at once, and moto's ``Message`` keeps per
message an instance dict, an empty ``message_attributes`` dict, an empty
``system_attributes`` dict, an empty list of old receipt handles and the
``SendMessageBatch`` entry id it was labelled with (only its response reads it).
``CompactMessage`` keeps the same fields in slots, holds no empty containers (an absent
one reads as a new empty one) and the entry id only until the response is built.
Measured with tracemalloc in process, a message queued by ``SendMessageBatch`` cost the
backend 925 bytes in all, 625 with ``CompactMessage`` (549 once ``sqs_store`` keeps its
schedule on the message).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from moto.core.utils import unix_time_millis
from moto.sqs import models as sqs_models

MotoMessage = sqs_models.Message
"""moto's own ``Message`` class (this module is imported before the patches replace it)."""


class CompactMessage:
    """moto 5.2's ``sqs.models.Message``, in slots, without per-message empty containers.

    The methods and properties are moto's own (``body_md5``, ``attribute_md5``,
    ``change_visibility``, ``visible``, ...), taken as defined in moto's class;
    ``mark_received`` and ``all_receipt_handles`` are moto's, over a tuple of old handles.
    ``store_token`` and ``store_ready`` belong to ``loadtest.backend.sqs.store``.
    """

    __slots__ = (
        "_message_attributes",
        "_old_receipt_handles",
        "_system_attributes",
        "approximate_first_receive_timestamp",
        "approximate_receive_count",
        "body",
        "deduplication_id",
        "delayed_until",
        "group_id",
        "id",
        "receipt_handle",
        "sent_timestamp",
        "sequence_number",
        "store_ready",
        "store_token",
        "user_id",
        "visible_at",
    )

    sender_id = sqs_models.DEFAULT_SENDER_ID

    def __init__(
        self, message_id: str, body: str, system_attributes: dict[str, Any] | None = None
    ) -> None:
        self.id = message_id
        self.body = body
        self._message_attributes: dict[str, Any] | None = None
        self.receipt_handle: str | None = None
        self._old_receipt_handles: tuple[str | None, ...] = ()
        self.sent_timestamp: int | None = None
        self.approximate_first_receive_timestamp: int | None = None
        self.approximate_receive_count = 0
        self.deduplication_id: str | None = None
        self.group_id: str | None = None
        self.sequence_number: str | None = None
        self.visible_at = 0.0
        self.delayed_until = 0.0
        self._system_attributes = system_attributes or None
        self.user_id: str | None = None
        self.store_token: int | None = None
        self.store_ready = False

    @property
    def message_attributes(self) -> dict[str, Any]:
        """The message attributes; a new empty dict when there are none (moto's default,
        which nothing mutates: moto replaces the dict whenever it changes them)."""
        found = self._message_attributes
        return {} if found is None else found

    @message_attributes.setter
    def message_attributes(self, value: dict[str, Any]) -> None:
        self._message_attributes = value

    @property
    def system_attributes(self) -> dict[str, Any]:
        """The system attributes (``AWSTraceHeader``); a new empty dict when none were sent."""
        found = self._system_attributes
        return {} if found is None else found

    @system_attributes.setter
    def system_attributes(self, value: dict[str, Any]) -> None:
        self._system_attributes = value

    def mark_received(self, visibility_timeout: int | None = None) -> None:
        """moto's ``Message.mark_received``, appending to the tuple of old handles."""
        visibility_timeout = int(visibility_timeout) if visibility_timeout else 0
        if not self.approximate_first_receive_timestamp:
            self.approximate_first_receive_timestamp = int(unix_time_millis())
        self.approximate_receive_count += 1
        if visibility_timeout:
            self.change_visibility(visibility_timeout)
        self._old_receipt_handles = (*self._old_receipt_handles, self.receipt_handle)
        self.receipt_handle = sqs_models.generate_receipt_handle()  # type: ignore[attr-defined]

    @property
    def all_receipt_handles(self) -> list[str | None]:
        """The current receipt handle, then every earlier one (moto's order, Nones kept)."""
        return [self.receipt_handle, *self._old_receipt_handles]

    def __copy__(self) -> CompactMessage:
        duplicate = CompactMessage.__new__(CompactMessage)
        for name in CompactMessage.__slots__:
            setattr(duplicate, name, getattr(self, name))
        return duplicate

    def __deepcopy__(self, memo: dict[int, Any]) -> CompactMessage:
        # What deepcopy does to moto's Message: strings and numbers are shared, the
        # attribute dicts copied.
        duplicate = self.__copy__()
        for name in ("_message_attributes", "_system_attributes"):
            value = getattr(self, name)
            if value is not None:
                setattr(duplicate, name, copy.deepcopy(value, memo))
        return duplicate

    body_md5 = MotoMessage.__dict__["body_md5"]
    attribute_md5 = MotoMessage.__dict__["attribute_md5"]
    update_binary_length_and_value = MotoMessage.__dict__["update_binary_length_and_value"]
    validate_attribute_name = MotoMessage.__dict__["validate_attribute_name"]
    utf8 = MotoMessage.__dict__["utf8"]
    mark_sent = MotoMessage.__dict__["mark_sent"]
    change_visibility = MotoMessage.__dict__["change_visibility"]
    delay = MotoMessage.__dict__["delay"]
    visible = MotoMessage.__dict__["visible"]
    delayed = MotoMessage.__dict__["delayed"]
    had_receipt_handle = MotoMessage.__dict__["had_receipt_handle"]


_SendBatch = Callable[..., tuple[list[Any], list[dict[str, Any]]]]


def label_batch(moto_send_message_batch: _SendBatch) -> _SendBatch:
    """``SQSBackend.send_message_batch`` whose answer is labelled copies of the messages.

    moto sets each stored message's ``user_id`` to its entry's ``Id`` for the response to
    read; the response gets a copy carrying it, the stored message forgets it.
    """

    def send_message_batch(*args: Any, **kwargs: Any) -> tuple[list[Any], list[dict[str, Any]]]:
        messages, failed = moto_send_message_batch(*args, **kwargs)
        labelled = []
        for message in messages:
            labelled.append(copy.copy(message))
            message.user_id = None
        return labelled, failed

    send_message_batch.__wrapped__ = moto_send_message_batch  # type: ignore[attr-defined]
    return send_message_batch
