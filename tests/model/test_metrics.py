"""loadtest.model.figures.metrics.Latency: HdrHistogram summaries in microseconds."""

from __future__ import annotations

from hdrh.histogram import HdrHistogram
from hypothesis import given, settings
from hypothesis import strategies as st

from loadtest.model.figures.metrics import HIGHEST_US, PERCENTILES, Latency, values_at_percentiles

SUMMARY_KEYS = ["count", "min", "p50", "p90", "p99", "p99_9", "max", "mean", "out_of_range"]


def filled() -> Latency:
    latency = Latency()
    for us in range(1, 1001):  # 1..1000 µs, recorded as nanoseconds
        latency.record_ns(us * 1000)
    return latency


def test_percentiles_in_microseconds() -> None:
    summary = filled().summary()
    assert list(summary) == SUMMARY_KEYS
    assert summary == {
        "count": 1000,
        "min": 1,
        "p50": 500,
        "p90": 900,
        "p99": 990,
        "p99_9": 999,
        "max": 1000,
        "mean": 500.5,
        "out_of_range": 0,
    }


@settings(max_examples=50, deadline=None)  # hdrh's own mean walks every bucket: slow by design
@given(st.lists(st.integers(min_value=1, max_value=HIGHEST_US), min_size=1, max_size=300))
def test_summary_reads_the_figures_hdrh_computes(values_us: list[int]) -> None:
    # The summary walks only the filled buckets, once: the same figures as hdrh's own
    # walks over every bucket.
    latency = Latency()
    for value_us in values_us:
        latency.record_ns(value_us * 1000)
    summary = latency.summary()
    histogram = latency.histogram
    for key, percentile in PERCENTILES:
        assert summary[key] == histogram.get_value_at_percentile(percentile)
    assert summary["mean"] == round(histogram.get_mean_value(), 1)


@settings(max_examples=50, deadline=None)  # hdrh's own walk reads every bucket: slow by design
@given(
    st.lists(st.integers(min_value=1, max_value=HIGHEST_US), min_size=1, max_size=300),
    st.lists(st.floats(min_value=0.0, max_value=100.0), min_size=1, max_size=20),
)
def test_values_at_percentiles_are_hdrh_s_own(
    values_us: list[int], percentiles: list[float]
) -> None:
    # The 0th percentile included: hdrh gives that bucket's lowest value, the others its highest.
    latency = Latency()
    for value_us in values_us:
        latency.record_ns(value_us * 1000)
    histogram = latency.histogram
    asked = [*percentiles, 0.0]
    assert values_at_percentiles(histogram, asked) == histogram.get_percentile_to_value_dict(asked)


def test_nanoseconds_are_rounded_to_whole_microseconds_min_one() -> None:
    latency = Latency()
    for ns in (0, 1, 499, 1_499, 1_500, 250_000):
        latency.record_ns(ns)
    summary = latency.summary()
    assert summary["count"] == 6
    assert summary["min"] == 1
    assert summary["max"] == 250
    assert latency.histogram.get_count_at_value(1) == 4
    assert latency.histogram.get_count_at_value(2) == 1


def test_value_above_one_hour_is_counted_out_of_range() -> None:
    latency = Latency()
    latency.record_ns(500_000)
    latency.record_ns(2 * HIGHEST_US * 1000)  # two hours
    summary = latency.summary()
    assert latency.out_of_range == 1
    assert summary["out_of_range"] == 1
    assert summary["count"] == 1
    assert summary["max"] == 500


def test_one_hour_is_in_range() -> None:
    latency = Latency()
    latency.record_ns(HIGHEST_US * 1000)
    assert latency.out_of_range == 0
    assert latency.summary()["count"] == 1


def test_empty_summary() -> None:
    assert Latency().summary() == {
        "count": 0,
        "min": None,
        "p50": None,
        "p90": None,
        "p99": None,
        "p99_9": None,
        "max": None,
        "mean": None,
        "out_of_range": 0,
    }


def test_encoded_decodes_to_the_same_percentiles() -> None:
    latency = filled()
    latency.record_ns(123_456_789)
    text = latency.encoded()
    assert isinstance(text, str)
    decoded = HdrHistogram.decode(text)
    original = latency.histogram
    assert decoded.get_total_count() == 1001
    for _, percentile in PERCENTILES:
        assert decoded.get_value_at_percentile(percentile) == original.get_value_at_percentile(
            percentile
        )
    assert decoded.get_min_value() == original.get_min_value()
    assert decoded.get_max_value() == original.get_max_value()


def test_encoded_histograms_merge() -> None:
    a, b = Latency(), Latency()
    a.record_ns(1_000_000)
    b.record_ns(3_000_000)
    merged = HdrHistogram.decode(a.encoded())
    merged.add(HdrHistogram.decode(b.encoded()))
    assert merged.get_total_count() == 2
    assert merged.get_min_value() == a.histogram.get_min_value() == 1000
    # Above 2048 µs a 3-significant-figure bucket is 2 µs wide: max is its highest equivalent.
    assert merged.get_max_value() == b.histogram.get_max_value() == 3001


def test_an_indeterminate_write_has_no_latency() -> None:
    from loadtest.model.figures.metrics import latencies
    from loadtest.model.history.log import WriteOutcome
    from tests.model.builders import invocation, lab_history, order_item, record, write

    history, _ = lab_history()
    history.invocations.append(
        invocation(
            "r-cut",
            [record("m-1", "dedup-order")],
            [write(order_item("dedup-order", 4), outcome=WriteOutcome.INDETERMINATE)],
        )
    )
    assert latencies(history)["write"].summary()["count"] == 4


def _us(values: list[int]) -> list[int]:
    return [v * 1_000 for v in values]


def test_latencies_join_each_message_once_by_its_id() -> None:
    """First delivery and first acknowledgement per message; an id the run did not send,
    or a second acknowledgement, is not measured; each acknowledgement call once."""
    from loadtest.model.figures.metrics import latencies
    from loadtest.model.history.log import Ack, History, SentMessage
    from tests.model.builders import invocation, record

    ms = 1_000_000
    history = History()
    history.sent = [
        SentMessage(0, "a", "{}", intended_ns=0, sent_ns=1 * ms, message_id="m-0"),
        SentMessage(1, "b", "{}", intended_ns=0, sent_ns=2 * ms, message_id="m-1"),
        SentMessage(2, "c", "{}", intended_ns=0, sent_ns=3 * ms, message_id=None),
    ]
    first = invocation("r-1", [record("m-0", "a"), record("m-1", "b")], [], started_ns=11 * ms)
    again = invocation("r-2", [record("m-0", "a"), record("m-x", None)], [], started_ns=50 * ms)
    history.invocations = [first, again]
    history.acks = [
        Ack("m-0", 20 * ms, requested_ns=14 * ms),  # one call: m-0 and m-1
        Ack("m-1", 20 * ms, requested_ns=14 * ms),
        Ack("m-1", 60 * ms, requested_ns=55 * ms),  # acknowledged again: a second call
        Ack("m-x", 70 * ms, requested_ns=69 * ms),  # not sent by the run: no end-to-end
    ]
    measured = {name: latency.summary() for name, latency in latencies(history).items()}
    # (The histograms keep 3 significant digits: a maximum reads its bucket's top.)
    assert (measured["end_to_end"]["count"], measured["end_to_end"]["min"]) == (2, 20_000)
    assert (measured["queue_dwell"]["count"], measured["queue_dwell"]["min"]) == (2, 9_000)
    assert 10_000 <= measured["queue_dwell"]["max"] < 10_010
    assert measured["handler"]["count"] == 2
    assert measured["ack"]["count"] == 3  # (14, 20), (55, 60), (69, 70)
    assert measured["ack"]["min"] == 1_000 and 6_000 <= measured["ack"]["max"] < 6_010


def test_ack_calls_in_a_log_out_of_answer_order_are_each_counted_once() -> None:
    from loadtest.model.figures.metrics import _ack_calls
    from loadtest.model.history.log import Ack

    in_order = [Ack("a", 5, 1), Ack("b", 5, 1), Ack("c", 5, 2), Ack("d", 9, 1)]
    assert sorted(_ack_calls(in_order)) == [3, 4, 8]
    shuffled = [Ack("d", 9, 1), Ack("a", 5, 1), Ack("c", 5, 2), Ack("b", 5, 1)]
    assert sorted(_ack_calls(shuffled)) == [3, 4, 8]
    assert list(_ack_calls([Ack("a", 5, None)])) == []
