"""The run's sinks: creating the topics, queues, buses, buckets, state machines and functions
a consumer sends effects to, and deleting exactly what was made.

Each sink (``loadtest.model.scenario.placeholders.Sink``) is created under the run's
prefix, tagged ``created-by=loadtest``, and recorded in its ``MadeSink`` the moment each
of its parts exists, so a failure halfway still lets ``delete_sinks`` remove what was
made and nothing else. A topic gets a capture queue subscribed to it without raw delivery
(a FIFO one for a FIFO topic): each message arrives in its notification, with every
message attribute it was published with (raw delivery drops a message of more than
ten). A bus gets a rule matching every event of the bus's account with a capture queue
as its target, a function (``CAPTURE_CODE``, with a role of its own) a
capture queue it sends each event it is invoked with to: what they delivered is read from
there. A state machine gets a role of its own too (``STATE_MACHINE_TRUST``, no
permissions: its one Pass state calls nothing); a function or state machine is created
once IAM has propagated its new role (``loadtest.aws.role_ready``). The embedded backend runs no function's code: its Invoke does what
``CAPTURE_CODE`` does (``loadtest.backend.awslambda.capture``).

Reading what they hold is ``loadtest.aws.sink_reads``'. ``loadtest cleanup`` finds a
killed run's topics, buses, buckets and state machines with ``find_tagged_sinks``; a
function sink's function, its roles and the capture queues are found by the same tag with
the run's other functions, roles and queues (``loadtest.deploy.lambda_cleanup``).

Synchronous boto3 calls, passed their clients (``SinkClients``, made by
``loadtest.aws.clients.sink_clients``): the engine runs them in a worker thread, explore
in its own. Every failure goes through ``loadtest.aws.errors``.
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

from loadtest.aws.errors import ERRORS, translated
from loadtest.aws.role_ready import once_role_is_usable
from loadtest.aws.target import BackendKind, Target
from loadtest.model.history.records import EffectKind
from loadtest.model.scenario.placeholders import Sink

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

CREATED_BY = ("created-by", "loadtest")
"""The tag every sink's resources carry, as the run's tables do."""
CAPTURE_RULE = "loadtest-capture"
"""The rule on a bus sink that sends every event of the bus to its capture queue."""
PASS_DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})
"""A state machine sink's definition: one Pass state (its executions are what counts)."""
CAPTURE_ENV = "LOADTEST_CAPTURE_QUEUE_URL"
"""The variable a function sink is told its capture queue's URL by."""
CAPTURE_CODE = """\
import json
import os

import boto3

_SQS = boto3.client("sqs")


def handler(event, context):
    _SQS.send_message(
        QueueUrl=os.environ["LOADTEST_CAPTURE_QUEUE_URL"],
        MessageBody=event if isinstance(event, str) else json.dumps(event, separators=(",", ":")),
    )
"""
"""A function sink's code (``index.py``): each event it is invoked with, sent to its capture
queue as JSON text."""
FUNCTION_RUNTIME: Final = "python3.12"
CAPTURE_POLICY = "loadtest-capture"
"""A function sink's role's inline policy: sending to its capture queue."""


def _trust(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": service},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    )


FUNCTION_TRUST = _trust("lambda.amazonaws.com")
"""Who may assume a function sink's role: Lambda."""
STATE_MACHINE_TRUST = _trust("states.amazonaws.com")
"""Who may assume a state machine sink's role: Step Functions."""


class SinkClients:
    """The boto3 clients sinks are made, read and deleted with, each made by ``make`` (given
    its service's name: ``"sqs"``, ``"lambda"``, ...) the first time it is used: a run whose
    sinks are topics makes an SNS and an SQS client, not seven."""

    def __init__(self, make: Callable[[str], Any]) -> None:
        self._make = make
        self._made: dict[str, Any] = {}

    def _client(self, service: str) -> Any:
        client = self._made.get(service)
        if client is None:
            client = self._made[service] = self._make(service)
        return client

    @property
    def sqs(self) -> SQSClient:
        return cast("SQSClient", self._client("sqs"))

    @property
    def sns(self) -> SNSClient:
        return cast("SNSClient", self._client("sns"))

    @property
    def events(self) -> EventBridgeClient:
        return cast("EventBridgeClient", self._client("events"))

    @property
    def s3(self) -> S3Client:
        return cast("S3Client", self._client("s3"))

    @property
    def stepfunctions(self) -> SFNClient:
        return cast("SFNClient", self._client("stepfunctions"))

    @property
    def lambda_(self) -> LambdaClient:
        return cast("LambdaClient", self._client("lambda"))

    @property
    def iam(self) -> IAMClient:
        return cast("IAMClient", self._client("iam"))

    def replace(self, **clients: Any) -> SinkClients:
        """These clients, but for those given by attribute name (``sqs=``, ``lambda_=``)."""
        given = {name.rstrip("_"): client for name, client in clients.items()}
        return SinkClients(lambda service: given.get(service) or self._client(service))

    def close(self) -> None:
        """Close the connections of each client made."""
        for client in self._made.values():
            client.close()


@dataclass
class MadeSink:
    """One sink's resources as far as they exist (each field set the moment its part does)."""

    sink: Sink
    name: str = ""
    """Its resource's name (``PREFIX-NAME``)."""
    address: str = ""
    """What the consumer is told: a topic's or state machine's ARN, a queue's URL, a bus's
    or bucket's name ("" until the resource exists)."""
    arn: str = ""
    """A queue sink's ARN (``{queue_arn:NAME}``); a bus's ARN."""
    capture_url: str = ""
    capture_arn: str = ""
    subscription_arn: str = ""
    rule: str = ""
    role: str = ""
    """A function or state machine sink's role's name."""
    seen: set[str] = field(default_factory=set)
    """Executions already read (a state machine keeps them: explore reads each once)."""

    def placeholder_values(self) -> dict[str, str]:
        """What the sink's placeholders stand for (``RunResources.sinks``): a queue's ARN,
        a topic's or queue's name, else its address."""
        values = {"queue_arn": self.arn, "queue_name": self.name, "topic_name": self.name}
        return {
            placeholder: values.get(placeholder.partition(":")[0], self.address)
            for placeholder in self.sink.placeholders
        }

    def names(self) -> list[str]:
        """Every part that exists, by name, for a message."""
        return [part for part in (self.address, self.capture_url, self.role) if part]


def create_sinks(
    clients: SinkClients,
    sinks: Sequence[Sink],
    prefix: str,
    *,
    into: list[MadeSink],
    target: Target,
    tags: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Create each sink's resources under ``prefix``, appending its ``MadeSink`` to ``into``
    before its first call, so teardown finds whatever part of it exists. Every part is
    tagged ``created-by=loadtest`` and with ``tags`` (a deployed run's ``loadtest:run``).
    ``sleep`` is what waiting for a new role sleeps with."""
    all_tags = dict([CREATED_BY, *(tags or {}).items()])
    for sink in sinks:
        made = MadeSink(sink, name=sink.resource_name(prefix))
        into.append(made)
        with translated(f"create the run's {sink.kind.value} sink {made.name}", target):
            _create(clients, made, prefix, target, all_tags, sleep)


def _deduplication(by_content: bool) -> dict[str, str]:
    """A FIFO queue's or topic's deduplication: by content too only when the scenario says
    the consumer's own has it (``Sink.content_deduplication``)."""
    return {"ContentBasedDeduplication": str(by_content).lower()}


def _queue(
    clients: SinkClients,
    name: str,
    fifo: bool,
    tags: dict[str, str],
    sender: str = "",
    by_content: bool = False,
) -> tuple[str, str]:
    """Create a queue (FIFO for ``fifo``, deduplicating by content too for ``by_content``)
    that ``sender``'s service may send to; its URL and ARN."""
    attributes = {"FifoQueue": "true", **_deduplication(by_content)} if fifo else {}
    url = clients.sqs.create_queue(
        QueueName=name,
        Attributes=attributes,  # type: ignore[arg-type]
        tags=tags,
    )["QueueUrl"]
    arn = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    if sender:
        service, source = sender.split(" ", 1)
        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": service},
                    "Action": "sqs:SendMessage",
                    "Resource": arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": source}},
                }
            ],
        }
        clients.sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})
    return url, arn


def _role(clients: SinkClients, made: MadeSink, prefix: str, trust: str, tag_list: Any) -> str:
    """Create the sink's role (``made.role`` set the moment it exists); its ARN."""
    name = made.sink.role_name(prefix)
    arn = clients.iam.create_role(
        RoleName=name,
        AssumeRolePolicyDocument=trust,
        Tags=tag_list,
        Description=f"loadtest: a {made.sink.kind.value.replace('_', ' ')} sink's role",
    )["Role"]["Arn"]
    made.role = name
    return arn


def _create(
    clients: SinkClients,
    made: MadeSink,
    prefix: str,
    target: Target,
    tags: dict[str, str],
    sleep: Callable[[float], None],
) -> None:
    sink = made.sink
    tag_list: Any = [{"Key": k, "Value": v} for k, v in tags.items()]
    if sink.kind is EffectKind.QUEUE:
        made.address, made.arn = _queue(
            clients, made.name, sink.fifo, tags, by_content=sink.content_deduplication
        )
    elif sink.kind is EffectKind.TOPIC:
        attributes = (
            {"FifoTopic": "true", **_deduplication(sink.content_deduplication)} if sink.fifo else {}
        )
        made.address = clients.sns.create_topic(
            Name=made.name, Attributes=attributes, Tags=tag_list
        )["TopicArn"]
        made.capture_url, made.capture_arn = _queue(
            clients,
            sink.capture_name(prefix),
            sink.fifo,
            tags,
            f"sns.amazonaws.com {made.address}",
        )
        made.subscription_arn = clients.sns.subscribe(
            TopicArn=made.address,
            Protocol="sqs",
            Endpoint=made.capture_arn,
            ReturnSubscriptionArn=True,
        )["SubscriptionArn"]
    elif sink.kind is EffectKind.BUS:
        made.arn = clients.events.create_event_bus(Name=made.name, Tags=tag_list)["EventBusArn"]
        made.address = made.name
        account = made.arn.split(":")[4]
        rule_arn = made.arn.replace(":event-bus/", ":rule/") + f"/{CAPTURE_RULE}"
        made.capture_url, made.capture_arn = _queue(
            clients, sink.capture_name(prefix), False, tags, f"events.amazonaws.com {rule_arn}"
        )
        clients.events.put_rule(
            Name=CAPTURE_RULE,
            EventBusName=made.name,
            EventPattern=json.dumps({"account": [account]}),
            Tags=tag_list,
        )
        made.rule = CAPTURE_RULE
        clients.events.put_targets(
            Rule=CAPTURE_RULE,
            EventBusName=made.name,
            Targets=[{"Id": "capture", "Arn": made.capture_arn}],
        )
    elif sink.kind is EffectKind.BUCKET:
        location: Any = (
            {}
            if target.region == "us-east-1"
            else {"CreateBucketConfiguration": {"LocationConstraint": target.region}}
        )
        clients.s3.create_bucket(Bucket=made.name, **location)
        made.address = made.name
        clients.s3.put_bucket_tagging(Bucket=made.name, Tagging={"TagSet": tag_list})
    elif sink.kind is EffectKind.STATE_MACHINE:
        machine_role = _role(clients, made, prefix, STATE_MACHINE_TRUST, tag_list)
        made.address = once_role_is_usable(
            lambda: clients.stepfunctions.create_state_machine(
                name=made.name,
                definition=PASS_DEFINITION,
                roleArn=machine_role,
                tags=[{"key": k, "value": v} for k, v in tags.items()],
            )["stateMachineArn"],
            made.role,
            sleep=sleep,
        )
    elif sink.kind is EffectKind.FUNCTION:
        made.capture_url, made.capture_arn = _queue(clients, sink.capture_name(prefix), False, tags)
        role_arn = _role(clients, made, prefix, FUNCTION_TRUST, tag_list)
        clients.iam.put_role_policy(
            RoleName=made.role,
            PolicyName=CAPTURE_POLICY,
            PolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Action": "sqs:SendMessage",
                            "Resource": made.capture_arn,
                        }
                    ],
                }
            ),
        )
        made.address = once_role_is_usable(
            lambda: clients.lambda_.create_function(
                FunctionName=made.name,
                Runtime=FUNCTION_RUNTIME,
                Role=role_arn,
                Handler="index.handler",
                Code={"ZipFile": capture_zip()},
                Environment={"Variables": {CAPTURE_ENV: made.capture_url}},
                Tags=tags,
            )["FunctionArn"],
            made.role,
            sleep=sleep,
        )
        if target.kind is BackendKind.AWS:
            # Lambda answers Invoke of a function still Pending with ResourceConflictException;
            # a local backend's is Active at once.
            clients.lambda_.get_waiter("function_active_v2").wait(
                FunctionName=made.name, WaiterConfig={"Delay": 1, "MaxAttempts": 300}
            )
    else:
        raise ValueError(f"no sink of kind {sink.kind}")


def capture_zip() -> bytes:
    """A function sink's code as Lambda takes it: ``CAPTURE_CODE`` as ``index.py``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo("index.py", date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        archive.writestr(info, CAPTURE_CODE)
    return buffer.getvalue()


def delete_sinks(clients: SinkClients, made: list[MadeSink]) -> list[str]:
    """Delete every part of each sink that exists (a bucket emptied first); return the
    problems by name instead of raising. What was wholly deleted leaves ``made``."""
    problems: list[str] = []
    for one in list(made):
        try:
            _delete(clients, one)
            made.remove(one)
        except ERRORS as exc:
            problems.append(f"{one.sink.kind.value} sink {one.name}: {exc}")
    return problems


def _delete(clients: SinkClients, made: MadeSink) -> None:
    kind = made.sink.kind
    if kind is EffectKind.TOPIC:
        if made.subscription_arn:
            clients.sns.unsubscribe(SubscriptionArn=made.subscription_arn)
            made.subscription_arn = ""
        if made.address:
            clients.sns.delete_topic(TopicArn=made.address)
            made.address = ""
    elif kind is EffectKind.BUS:
        if made.rule:
            clients.events.remove_targets(Rule=made.rule, EventBusName=made.name, Ids=["capture"])
            clients.events.delete_rule(Name=made.rule, EventBusName=made.name)
            made.rule = ""
        if made.arn:
            clients.events.delete_event_bus(Name=made.name)
            made.arn = made.address = ""
    elif kind is EffectKind.QUEUE:
        if made.address:
            clients.sqs.delete_queue(QueueUrl=made.address)
            made.address = ""
    elif kind is EffectKind.BUCKET:
        if made.address:
            _empty_bucket(clients.s3, made.name)
            clients.s3.delete_bucket(Bucket=made.name)
            made.address = ""
    elif kind is EffectKind.STATE_MACHINE and made.address:
        clients.stepfunctions.delete_state_machine(stateMachineArn=made.address)
        made.address = ""
    elif kind is EffectKind.FUNCTION and made.address:
        clients.lambda_.delete_function(FunctionName=made.address)
        made.address = ""
    if made.role:
        _delete_role(clients.iam, made.role)
        made.role = ""
    if made.capture_url:
        clients.sqs.delete_queue(QueueUrl=made.capture_url)
        made.capture_url = ""


def _delete_role(iam: IAMClient, name: str) -> None:
    """Delete a sink's role with its inline policies (none, or one made before a failure)."""
    for policy in iam.list_role_policies(RoleName=name).get("PolicyNames", []):
        iam.delete_role_policy(RoleName=name, PolicyName=policy)
    iam.delete_role(RoleName=name)


def delete_found_sink(clients: SinkClients, kind: EffectKind, address: str) -> None:
    """Delete a sink found by its tag (``loadtest cleanup``), from its address alone: a
    topic's subscriptions and a bus's rules first (its capture queue is a tagged queue of its
    own), a bucket emptied first. A state machine's role, a function sink's function and
    role are found and deleted as the run's other roles and functions are."""
    if kind is EffectKind.TOPIC:
        listed = clients.sns.list_subscriptions_by_topic(TopicArn=address)
        for subscription in listed.get("Subscriptions", []):
            if subscription["SubscriptionArn"].startswith("arn:"):
                clients.sns.unsubscribe(SubscriptionArn=subscription["SubscriptionArn"])
        clients.sns.delete_topic(TopicArn=address)
    elif kind is EffectKind.BUS:
        for rule in clients.events.list_rules(EventBusName=address).get("Rules", []):
            targets = clients.events.list_targets_by_rule(Rule=rule["Name"], EventBusName=address)
            ids = [t["Id"] for t in targets.get("Targets", [])]
            if ids:
                clients.events.remove_targets(Rule=rule["Name"], EventBusName=address, Ids=ids)
            clients.events.delete_rule(Name=rule["Name"], EventBusName=address)
        clients.events.delete_event_bus(Name=address)
    elif kind is EffectKind.BUCKET:
        _empty_bucket(clients.s3, address)
        clients.s3.delete_bucket(Bucket=address)
    elif kind is EffectKind.STATE_MACHINE:
        clients.stepfunctions.delete_state_machine(stateMachineArn=address)
    else:
        raise ValueError(f"a {kind} sink is found and deleted as a queue, function and role")


def find_tagged_sinks(
    clients: SinkClients, tag: str, value: str | None = None
) -> list[tuple[EffectKind, str, str]]:
    """Topics, buses, buckets and state machines named ``loadtest-...`` whose ``tag`` is set
    (to ``value`` if given): each as (kind, address, the tag's value). Queues, functions
    and roles are not listed here (they are found with the run's other queues, functions
    and roles, by the same tag)."""
    found: list[tuple[EffectKind, str, str]] = []

    def matching(tags: dict[str, str]) -> str | None:
        got = tags.get(tag)
        return got if got is not None and (value is None or got == value) else None

    for page in clients.sns.get_paginator("list_topics").paginate():
        for topic in page.get("Topics", []):
            arn = topic["TopicArn"]
            if arn.rsplit(":", 1)[-1].startswith(NAME_START):
                topic_tags = clients.sns.list_tags_for_resource(ResourceArn=arn).get("Tags", [])
                run = matching({t["Key"]: t["Value"] for t in topic_tags})
                if run is not None:
                    found.append((EffectKind.TOPIC, arn, run))
    for bus in clients.events.list_event_buses(NamePrefix=NAME_START).get("EventBuses", []):
        bus_tags = clients.events.list_tags_for_resource(ResourceARN=bus["Arn"]).get("Tags", [])
        run = matching({t["Key"]: t["Value"] for t in bus_tags})
        if run is not None:
            found.append((EffectKind.BUS, bus["Name"], run))
    for bucket in clients.s3.list_buckets().get("Buckets", []):
        name = bucket["Name"]
        if not name.startswith(NAME_START):
            continue
        try:
            tag_set = clients.s3.get_bucket_tagging(Bucket=name)["TagSet"]
        except ERRORS:  # no tags, or a bucket of another region this client cannot read
            continue
        run = matching({t["Key"]: t["Value"] for t in tag_set})
        if run is not None:
            found.append((EffectKind.BUCKET, name, run))
    for machines in clients.stepfunctions.get_paginator("list_state_machines").paginate():
        for machine in machines.get("stateMachines", []):
            if machine["name"].startswith(NAME_START):
                arn = machine["stateMachineArn"]
                machine_tags = clients.stepfunctions.list_tags_for_resource(resourceArn=arn)
                run = matching({t["key"]: t["value"] for t in machine_tags.get("tags", [])})
                if run is not None:
                    found.append((EffectKind.STATE_MACHINE, arn, run))
    return found


NAME_START = "loadtest-"
"""What every sink's resource name starts with (the run's prefix): only those are asked
for their tags."""


def _empty_bucket(s3: S3Client, bucket: str) -> None:
    while True:
        page = s3.list_objects_v2(Bucket=bucket)
        keys = [{"Key": entry["Key"]} for entry in page.get("Contents", [])]
        if not keys:
            return
        s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})  # type: ignore[typeddict-item]
