"""An effect call sent and answered: the observer's part around its request, and its answer
read into one ``EffectRecord`` per entry.

Owns ``EffectSending``, the part of ``loadtest.observer.write_observer.WriteObserver``
that plans an effect call into the request's context (``_planned_effect``), sends every
call that is not to the watched table (``_send_other``: an effect call is recorded once
its answer is parsed, refused, ``NoAnswer``, when it raised instead) and is told the
queues that feed the function (``add_source_queues``); and reading an answer
(``effect_records``: a batch's ``Failed`` entry, an entry with an ``ErrorCode``, an error
answer or no answer at all is not accepted; a send to the source queue keeps the message
id the queue answered). What an effect call is, and what each entry
carries, is ``loadtest.observer.effects``'. Touches no botocore. Ships in the observer
layer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from loadtest.model.history.observation import Observation
from loadtest.model.history.records import SOURCE_SENDS, EffectKind, EffectRecord
from loadtest.observer.effects import EFFECTS, NO_ANSWER, EffectCall, EffectPlanner
from loadtest.observer.record_marks import current_record


class EffectSending:
    """The observer's effect calls: planned, sent, recorded (a ``WriteObserver``'s part)."""

    _effects: EffectPlanner
    clock: Callable[[], int]
    request_id: str

    def _emit(self, observation: Observation) -> None:
        raise NotImplementedError

    def _fault(self, operation: str, exc: BaseException) -> None:
        raise NotImplementedError

    def add_source_queues(self, addresses: Iterable[str]) -> None:
        """Queues (URLs or ARNs) that feed the function too: sends to them are not effects
        (the entry point adds each event's ``eventSourceARN``)."""
        self._effects.add_sources(addresses)

    def set_receipts(self, receipts: dict[str, str]) -> None:
        """The message ids by receipt handle of the messages being handled (the entry
        point's, per event; ``explore``'s, one dict it fills as it delivers): a delete of one
        by the handler is recorded by its id."""
        self._effects.set_receipts(receipts)

    def _planned_effect(
        self, service: str, name: str, params: dict[str, Any], context: Any
    ) -> dict[str, Any]:
        if not isinstance(context, dict):
            return params
        try:
            planned = self._effects.plan(service, name, params)
        except Exception as exc:
            self._fault(name, exc)
            return params
        if planned is None:
            return params
        new_params, effect = planned
        context[EFFECTS] = effect
        return new_params

    def _send_other(self, request_context: Any, send: Callable[[], Any]) -> Any:
        """A request that is not to the watched table: an effect call is recorded, entry by
        entry, once its answer is parsed; any other is sent as is.

        ``explore``'s observer overrides it to make calls to other tables and effect calls
        points too.
        """
        if EFFECTS not in request_context:  # botocore's request context: always a dict
            return send()
        effect = take_effect(request_context)
        if effect is None:
            return send()
        return self._send_effect(effect, send)[0]

    async def _send_other_async(
        self, request_context: Any, send: Callable[[], Awaitable[Any]]
    ) -> Any:
        """``_send_other`` for aiobotocore."""
        if EFFECTS not in request_context:
            return await send()
        effect = take_effect(request_context)
        if effect is None:
            return await send()
        return (await self._send_effect_async(effect, send))[0]

    def _send_effect(
        self, effect: EffectCall, send: Callable[[], Any]
    ) -> tuple[Any, list[EffectRecord]]:
        """Send an effect call; emit one record per entry (each refused, ``NoAnswer``,
        when the call raised: it may or may not have been sent)."""
        record_id = current_record()
        started = self.clock()
        try:
            answer = send()
        except BaseException:
            self._effect_answer(effect, None, started, record_id)
            raise
        return answer, self._effect_answer(effect, answer, started, record_id)

    async def _send_effect_async(
        self, effect: EffectCall, send: Callable[[], Awaitable[Any]]
    ) -> tuple[Any, list[EffectRecord]]:
        """``_send_effect`` for aiobotocore."""
        record_id = current_record()
        started = self.clock()
        try:
            answer = await send()
        except BaseException:
            self._effect_answer(effect, None, started, record_id)
            raise
        return answer, self._effect_answer(effect, answer, started, record_id)

    def _effect_answer(
        self, effect: EffectCall, answer: Any, started: int, record_id: str
    ) -> list[EffectRecord]:
        ended = self.clock()
        try:
            records = effect_records(
                effect, answer, started, ended, request_id=self.request_id, record_id=record_id
            )
            for record in records:
                self._emit(record)
        except Exception as exc:
            self._fault(effect.operation, exc)
            return []
        return records


def take_effect(request_context: Any) -> EffectCall | None:
    """The effect call planned for this request, taken out of its context (a retry of the
    whole call is observed afresh); None when the request is not one."""
    if not isinstance(request_context, dict):
        return None
    effect = request_context.pop(EFFECTS, None)
    return effect if isinstance(effect, EffectCall) else None


def _error_code(parsed: Any) -> str:
    error = parsed.get("Error") if isinstance(parsed, dict) else None
    code = error.get("Code") if isinstance(error, dict) else None
    return str(code) if code else "Error"


def effect_records(
    call: EffectCall,
    answer: Any,
    started_ns: int,
    ended_ns: int,
    *,
    request_id: str,
    record_id: str,
) -> list[EffectRecord]:
    """One record per entry of ``call`` from its answer (``(http, parsed)``; None: no answer)."""
    codes: list[str | None]
    if answer is None:
        codes = [NO_ANSWER] * len(call.entries)
    else:
        http, parsed = answer
        status = int(getattr(http, "status_code", 200))
        if status >= 300 or (isinstance(parsed, dict) and "Error" in parsed):
            codes = [_error_code(parsed)] * len(call.entries)
        elif call.batch == "failed":
            failed = {
                str(f.get("Id")): str(f.get("Code") or "Failed")
                for f in parsed.get("Failed") or []
                if isinstance(f, dict)
            }
            codes = [failed.get(e.entry_id) for e in call.entries]
        elif call.batch == "entries":
            results = parsed.get("Entries") or []
            unanswered = "Failed" if parsed.get("FailedEntryCount") else None
            codes = [
                (str(results[i].get("ErrorCode") or "") or None)
                if i < len(results) and isinstance(results[i], dict)
                else unanswered
                for i in range(len(call.entries))
            ]
        else:
            codes = [None] * len(call.entries)
    keys = [e.key for e in call.entries]
    if call.kind is EffectKind.SOURCE and call.operation in SOURCE_SENDS and answer is not None:
        keys = _sent_message_ids(call, answer[1])
    return [
        EffectRecord(
            operation=call.operation,
            kind=call.kind,
            sink=entry.sink,
            payload=entry.payload,
            accepted=code is None,
            started_ns=started_ns,
            ended_ns=ended_ns,
            key=key,
            dedup_id=entry.dedup_id,
            group_id=entry.group_id,
            error_code=code,
            call_id=call.call_id,
            request_id=request_id,
            record_id=record_id,
            message_attributes=entry.message_attributes,
            subject=entry.subject,
        )
        for entry, code, key in zip(call.entries, codes, keys, strict=True)
    ]


def _sent_message_ids(call: EffectCall, parsed: Any) -> list[str]:
    """The message id the queue gave each entry of a send (``MessageId``, or a batch's
    ``Successful[].MessageId`` by entry id); "" for an entry it did not take."""
    if not isinstance(parsed, dict):
        return [""] * len(call.entries)
    if not call.batch:
        return [str(parsed.get("MessageId") or "")] * len(call.entries)
    taken = {
        str(s.get("Id")): str(s.get("MessageId") or "")
        for s in parsed.get("Successful") or []
        if isinstance(s, dict)
    }
    return [taken.get(e.entry_id, "") for e in call.entries]
