"""Narrow monkeypatches that make moto 5.2.5's server fast enough, its SQS thread-safe and
FIFO-faithful, and its PartiQL writes and update operands behave like DynamoDB's.

Owns what is installed and when: ``apply()`` installs every replacement once per process
(it is idempotent) and refuses any moto but the release whose ``moto/sqs/models.py``,
``moto/dynamodb/models/__init__.py`` and ``moto/moto_server`` this mirrors
(``versions.SUPPORTED``: moto's patch releases change the internals copied here). The
replacements live beside it, by service as moto lays them out: the indexed store in
``sqs.store``, the SQS functions that use it in ``sqs.patches``, FIFO deduplication and
long polls in ``sqs.fifo``, PartiQL writes in ``dynamodb.partiql``, update operands in
``dynamodb.update_operands``, transaction tokens in ``dynamodb.transact_tokens``, key
types in ``dynamodb.key_types``, the legacy ConditionalOperator in
``dynamodb.legacy_conditions`` and the legacy AttributeUpdates actions in
``dynamodb.legacy_updates``; moto's core (clock, memoised answers, request ids, regions,
model objects kept) in ``core``, IAM in ``iam``, the HTTP side in ``http``; a FIFO
topic's deduplication in ``sns.fifo`` and a subscription's one signing certificate in
``sns.signing``, installed by ``http.app`` only when SNS is first used. Must not touch: the rest of DynamoDB (its races are
closed by serialising requests in ``loadtest.backend.embedded``), PartiQL SELECT
(moto's own), any other service, or anything a client can observe except speed, FIFO
deduplication and group order (as SQS behaves), the PartiQL answers below, and an
update's operands (``SET a = b DELETE b :x`` keeps b's old value in a, as DynamoDB does)
and the ClientRequestToken of TransactWriteItems and ExecuteTransaction (a repeat within
10 minutes writes nothing), a key of the wrong type or an unknown legacy update action (a ValidationException, not a
500) and a legacy ``ConditionalOperator=OR``. The moto bugs this fixes are listed, each with
the test that shows it on moto as shipped, in docs/architecture.md ("The embedded
backend's fixes to moto"); the versions patched are ``versions``'.

Why, measured on moto 5.2.5's threaded server:

* Dispatch. Every request, whatever the service, looks its service up through
  ``moto.backends.list_of_moto_modules``, which lists moto's package directory and
  ``stat``s each of its ~270 entries - under the dispatcher's global lock
  (``DomainDispatcherApplication.get_application``). That is ~0.7 ms of serialised
  filesystem calls per SQS request, a third of a conditional ``PutItem``.
* Depth. ``Queue._messages`` is a list and every question is a scan of it.
  ``SQSBackend.send_message`` reads ``Queue.attributes``, which counts visible,
  in-flight and delayed messages (three scans); ``SQSBackend.receive_message`` scans
  ``Queue.messages`` and then, per message returned, calls
  ``is_message_valid_based_on_retention_period`` (three more ``Queue.attributes``);
  ``Queue.delete_message`` and ``SQSBackend.change_message_visibility`` scan for the receipt
  handle and rebuild the list. Sends fell from 151/s to 42/s as a queue grew to 300
  messages; a receive of 10 fell from 19.8 to 0.9 calls/s at depth 1,000.
* Threads. Nothing but ``add_message`` takes the queue's lock, so two pollers can pick the
  same visible message::

      poller A                          poller B
      snapshot Queue.messages: [m1]
                                        snapshot Queue.messages: [m1]
      m1.mark_received()  -> handle hA
                                        m1.mark_received()  -> handle hB
      returns m1                        returns m1        (one message, two consumers)

  and a delete that rebuilds the list can drop a message appended meanwhile::

      DeleteMessage                     SendMessage
      new = [m for m in _messages ...]
                                        _messages.append(m9)
      _messages = new                   (m9 is gone: acknowledged by nobody, lost)

What changes:

* ``moto.backends.list_of_moto_modules`` returns the list it computed once: moto's own
  subpackages do not change while it runs.
* A stored DynamoDB item's attribute names are one shared string per name (``interning``
  says why), not a copy per item.
* A queued SQS message is a ``CompactMessage`` (``sqs_message`` says why): moto's fields
  in slots, no empty containers per message, and no ``SendMessageBatch`` entry id kept
  once the response is built.
* moto's per-request method listing, action-name conversion (and the same conversion of
  the 14 attribute names ``Queue.attributes`` reads on every ``SendMessage``),
  condition-expression parsing and the response serializer's alias lookup per member
  are kept once computed (``memo`` says why each is safe to
  keep), and a receipt handle (and every response's request id, ``random_strings``) is
  drawn from one call's random bytes instead of one draw per letter.
* A JSON-protocol error (every DynamoDB error) is built without the XML body moto renders
  and then replaces (``json_errors``), and the clock SQS reads several times per message
  is read without building datetimes (``clock``).
* The regions moto lists for a service are worked out once per service and the botocore
  session that read them is let go (``regions`` says why: ~9 MB of parsed JSON kept).
* Until something loads moto's IAM, a request neither imports it nor looks the access
  key up in it (``lazy_iam`` says why and why the answers are the same).
* Every answer's body is searched for the ``<RequestId>`` moto writes the request id
  into only when it holds one (``request_id_body`` says why and why the bodies are the
  same).
* A JSON-protocol body (DynamoDB's and SQS's calls) is walked against its operation's
  input shape by a plan made once per operation (``json_params`` says why and why the
  parameters are the same).
* A JSON-protocol answer made of plain data (DynamoDB's and SQS's) is written against its
  operation's output shape by a plan made once per operation (``json_answers`` says why
  and why the bytes are the same).

and on ``moto.sqs.models``:

* ``Queue._messages`` becomes a property holding an ``IndexedMessages``: arrival-ordered
  members, a receipt-handle index, and two heaps (available oldest-first; in-flight or
  delayed by the time they become available). It still iterates, appends and removes like
  the list moto's unpatched code expects.
* ``Queue.approximate_number_of_messages``, ``..._not_visible`` and ``..._delayed`` read
  the store (work proportional to in-flight messages, not queue depth). That alone makes
  ``Queue.attributes`` - and so ``SendMessage`` and ``GetQueueAttributes`` - cheap.
* ``Queue.delete_message`` and ``SQSBackend.change_message_visibility`` find the message by
  its receipt handle in O(1).
* ``SQSBackend.send_message`` to a standard queue skips building the queue's
  ``attributes``, which it read only for ``ContentBasedDeduplication`` (a FIFO queue's
  attribute): moto's code otherwise, installed only while moto's source is the one
  mirrored (``SEND_MESSAGE_SOURCE_SHA256``).
* ``SQSBackend.receive_message`` for standard queues pops available messages off the heap
  under the queue's lock (``Queue._messages_lock``); the long-poll wait releases that lock
  and sleeps until a send, a visibility change, the next message becoming visible again, or
  the end of the poll. FIFO queues keep moto's own selection, serialised per queue (the
  long poll is ``fifo_patches.receive``), and the index is rebuilt after it (O(n), as
  moto is).
* ``SQSBackend.purge_queue`` runs under the queue's lock; queue creation, deletion,
  listing and attribute changes run under one lock, since ``Queue._setup_dlq`` iterates
  ``SQSBackend.queues``.

PartiQL, measured on moto 5.2.5 (py-partiql-parser 0.6.3), which hands every statement to
py-partiql-parser and stores whatever item it returns:

* ``INSERT INTO "t" VALUE {...}`` of a stored key overwrites it (DynamoDB:
  ``DuplicateItemException``, "Duplicate primary key exists in table"); so does an INSERT
  inside BatchExecuteStatement (DynamoDB: that entry's ``Error.Code`` is ``DuplicateItem``)
  and ExecuteTransaction, which also keeps the other statements' writes (DynamoDB:
  ``TransactionCanceledException``, reasons ``[None, DuplicateItem]``, nothing written).
* A parameterised INSERT (``VALUE {'id': ?}``) and any DELETE with a ``?`` fail with a
  server error (``TypeError`` / ``AssertionError``), as does any RETURNING clause and any
  WHERE condition beyond the key equalities other than a function call.
* ``UPDATE ... WHERE id = ?`` of a missing key answers success, and an extra
  ``AND attribute_not_exists(x)`` is ignored: the update is applied (DynamoDB: both
  ``ConditionalCheckFailedException``; PartiQL UPDATE never creates an item).

What changes: INSERT, UPDATE and DELETE are read by ``loadtest.model.dynamodb.partiql.statements`` (key from the
table's schema, SET/REMOVE as an UpdateExpression, the other WHERE conjuncts as a
ConditionExpression) and run through moto's own ``put_item`` / ``update_item`` /
``delete_item``: INSERT refuses a stored key, UPDATE a missing one, DELETE of a missing
key succeeds deleting nothing, extra conditions are evaluated by moto's condition
evaluator, and ``RETURNING ALL OLD * | MODIFIED OLD * | ALL NEW * | MODIFIED NEW *``
fills ``Items``. A transaction checks every statement before applying any. Each call is
atomic because ``SerialisedDynamoDB`` runs one DynamoDB request at a time. A statement
the parser cannot read is a ``ValidationException``; SELECT stays moto's.

Kept exactly as moto does it: the order messages are handed out (arrival order among
visible ones), visibility timeout and ``ApproximateReceiveCount``, redrive to the dead-letter
queue when a message due for delivery has reached ``maxReceiveCount``, deleting by any
receipt handle a message ever had (and again, silently), message attributes and their MD5,
retention, and what ``GetQueueAttributes`` counts.
"""

from __future__ import annotations

import threading

import moto
import moto.backends
import moto.core.responses
import moto.core.serialize
import moto.core.utils
import moto.dynamodb.comparisons
import moto.dynamodb.models
import moto.dynamodb.models.table
import moto.dynamodb.parsing.validators
import moto.dynamodb.responses
import moto.sqs.models
from moto.core.authorization import ActionAuthenticatorMixin
from moto.core.base_backend import AccountSpecificBackend
from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionResult, BaseResponse
from moto.core.serialize import XFormedAttributePicker
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.responses import DynamoHandler
from moto.moto_api._internal.moto_random import MotoRandom
from moto.sqs.models import Queue, SQSBackend

from loadtest.backend import versions
from loadtest.backend.core import (
    clock,
    json_answers,
    json_params,
    memo,
    random_strings,
    regions,
    request_id_body,
)
from loadtest.backend.dynamodb import (
    interning,
    key_types,
    legacy_conditions,
    legacy_updates,
    transact_tokens,
    update_operands,
)
from loadtest.backend.dynamodb import partiql as partiql_patches
from loadtest.backend.dynamodb.partiql import DuplicateItemException as DuplicateItemException
from loadtest.backend.dynamodb.partiql import (
    _make_batch_execute_statement,
    _make_execute_statement,
    _make_execute_transaction,
)
from loadtest.backend.http import json_errors
from loadtest.backend.iam import lazy_iam
from loadtest.backend.sqs import fifo as fifo_patches
from loadtest.backend.sqs.message import CompactMessage, label_batch
from loadtest.backend.sqs.patches import (
    _approximate_number_of_messages,
    _approximate_number_of_messages_delayed,
    _approximate_number_of_messages_not_visible,
    _generate_receipt_handle,
    _get_messages,
    _make_list_of_moto_modules,
    _make_purge_queue,
    _make_receive_message,
    _make_send_message,
    _serialised,
    _set_messages,
)
from loadtest.backend.sqs.patches import _change_message_visibility as _change_message_visibility
from loadtest.backend.sqs.patches import _queue_delete_message as _queue_delete_message
from loadtest.backend.sqs.store import DELETED_HANDLES_KEPT as DELETED_HANDLES_KEPT
from loadtest.backend.sqs.store import IndexedMessages as IndexedMessages
from loadtest.backend.sqs.store import RecentHandles as RecentHandles

__all__ = [
    "DuplicateItemException",
    "IndexedMessages",
    "apply",
    "check_moto_version",
    "is_applied",
]

_MARKER = "_loadtest_patched"
_APPLY_LOCK = threading.Lock()


def _replacements() -> dict[tuple[object, str], object]:
    """(moto class or module, attribute) -> what ``apply()`` installs there."""
    resolving = moto.dynamodb.parsing.validators.ExpressionAttributeResolvingProcessor
    replacements: dict[tuple[object, str], object] = {
        (moto.backends, "list_of_moto_modules"): _make_list_of_moto_modules(
            moto.backends.list_of_moto_modules
        ),
        (Queue, "_messages"): property(_get_messages, _set_messages),
        (Queue, "approximate_number_of_messages"): property(_approximate_number_of_messages),
        (Queue, "approximate_number_of_messages_not_visible"): property(
            _approximate_number_of_messages_not_visible
        ),
        (Queue, "approximate_number_of_messages_delayed"): property(
            _approximate_number_of_messages_delayed
        ),
        (Queue, "delete_message"): _queue_delete_message,
        (moto.sqs.models, "generate_receipt_handle"): _generate_receipt_handle,
        (SQSBackend, "receive_message"): _make_receive_message(SQSBackend.receive_message),
        (SQSBackend, "change_message_visibility"): _change_message_visibility,
        (SQSBackend, "purge_queue"): _make_purge_queue(SQSBackend.purge_queue),
        (SQSBackend, "send_message"): fifo_patches.make_send_message(
            _make_send_message(SQSBackend.send_message)
        ),
        (SQSBackend, "send_message_batch"): label_batch(SQSBackend.send_message_batch),
        (moto.sqs.models, "Message"): CompactMessage,
        (moto.core.responses, "method_names_from_class"): memo.memo_method_names(
            moto.core.utils.method_names_from_class
        ),
        (Item, "__init__"): interning.interned_attribute_names(Item.__init__),
        (JsonRESTError, "__init__"): json_errors.without_xml(JsonRESTError.__init__),
        (DynamoHandler, "transact_write_items"): transact_tokens.idempotent_transactions(
            DynamoHandler.transact_write_items
        ),
        (DynamoHandler, "execute_transaction"): transact_tokens.idempotent_transactions(
            DynamoHandler.execute_transaction
        ),
        (DynamoDBBackend, "get_keys_value"): key_types.checked_keys(DynamoDBBackend.get_keys_value),
        (DynamoHandler, "put_item"): key_types.checked_put(
            legacy_conditions.with_operator(DynamoHandler.put_item)
        ),
        (DynamoHandler, "update_item"): legacy_updates.checked_actions(
            legacy_conditions.with_operator(DynamoHandler.update_item)
        ),
        (resolving, "resolve_expression_path"): update_operands.copied_operands(
            resolving.resolve_expression_path
        ),
        (MotoRandom, "get_random_string"): random_strings.get_random_string,
        (AccountSpecificBackend, "_generate_regions"): regions.regions_once(
            AccountSpecificBackend._generate_regions.__wrapped__,
            AccountSpecificBackend.get_session.cache_clear,
        ),
        (DynamoDBBackend, "execute_statement"): _make_execute_statement(
            DynamoDBBackend.execute_statement
        ),
        (DynamoDBBackend, "batch_execute_statement"): _make_batch_execute_statement(
            DynamoDBBackend.batch_execute_statement
        ),
        (DynamoDBBackend, "execute_transaction"): _make_execute_transaction(
            DynamoDBBackend.execute_transaction
        ),
    }
    if lazy_iam.mirrors_installed_moto():
        replacements[BaseResponse, "setup_class"] = lazy_iam.setup_class
        replacements[BaseResponse, "get_current_account"] = lazy_iam.get_current_account
        replacements[ActionAuthenticatorMixin, "_authenticate_and_authorize_normal_action"] = (
            lazy_iam.authorize_when_due(
                ActionAuthenticatorMixin._authenticate_and_authorize_normal_action
            )
        )
    if request_id_body.mirrors_installed_moto():
        replacements[BaseResponse, "_enrich_response"] = staticmethod(
            request_id_body.enrich_response
        )
    if json_params.mirrors_installed_moto():
        replacements[BaseResponse, "parse_parameters"] = json_params.planned_parse_parameters(
            BaseResponse.parse_parameters
        )
    if json_answers.mirrors_installed_moto():
        replacements[ActionResult, "execute_result"] = json_answers.planned_execute_result(
            ActionResult.execute_result
        )
    unix_time = clock.fast_unix_time(moto.core.utils.unix_time, moto.core.utils)
    for module in (moto.core.utils, moto.sqs.models):
        replacements[module, "unix_time"] = unix_time
    to_underscores = memo.memo_camelcase(moto.core.utils.camelcase_to_underscores)
    for module in (moto.core.responses, moto.sqs.models):
        replacements[module, "camelcase_to_underscores"] = to_underscores
    parse_condition = memo.memo_filter_expression(moto.dynamodb.comparisons.get_filter_expression)
    for module in (moto.dynamodb.models, moto.dynamodb.models.table, partiql_patches):
        replacements[module, "get_filter_expression"] = parse_condition
    get_expected = legacy_conditions.honouring_operator(moto.dynamodb.comparisons.get_expected)
    for module in (moto.dynamodb.models, moto.dynamodb.models.table):
        replacements[module, "get_expected"] = get_expected
    replacements[XFormedAttributePicker, "get_possible_keys"] = memo.memo_possible_keys(
        XFormedAttributePicker.get_possible_keys, moto.core.serialize.DEFAULT_ALIAS_PROVIDERS
    )
    replacements[moto.dynamodb.responses, "create_condition_expression_parser"] = (
        memo.memo_condition_parser(moto.dynamodb.comparisons.create_condition_expression_parser)
    )
    for name in (
        "create_queue",
        "delete_queue",
        "list_queues",
        "set_queue_attributes",
        "list_dead_letter_source_queues",
    ):
        replacements[SQSBackend, name] = _serialised(getattr(SQSBackend, name))
    return replacements


# -- installation -----------------------------------------------------------------------------
def check_moto_version(version: str = moto.__version__) -> None:
    """Raise ``UnsupportedMotoVersion`` unless ``version`` is in the supported range."""
    versions.check_version("moto", version)


def is_applied() -> bool:
    """Whether ``apply()`` has patched moto in this process."""
    return bool(getattr(Queue, _MARKER, False))


def apply() -> None:
    """Install the patches (idempotent, thread-safe); refuse, before patching anything, any
    patched library outside ``versions.SUPPORTED``."""
    with _APPLY_LOCK:
        if is_applied():
            return
        versions.check_versions()
        for (owner, name), replacement in _replacements().items():
            setattr(owner, name, replacement)
        fifo_patches.disable_moto_dedup()
        setattr(Queue, _MARKER, True)
