"""Real clients against a real broker process: confluent-kafka (librdkafka) and
kafka-python, with unmodified client settings."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import ConfigResource, NewTopic

from broker.launcher import BrokerProcess
from tests.eventually import eventually
from tests.reading import poll_records
from workloads.handles import Clients

pytestmark = [pytest.mark.broker, pytest.mark.integration]


def create(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> None:
    topic = NewTopic(
        name, partitions, 1, config={k.replace("_", "."): v for k, v in configs.items()}
    )
    with Clients() as clients:
        clients.admin({"bootstrap.servers": bootstrap}).create_topics([topic])[name].result(10)


def produce(
    bootstrap: str, topic: str, values: list[bytes], **settings: object
) -> list[tuple[int, int]]:
    """Produces and returns ``(partition, offset)`` of every acknowledged record."""
    acked: list[tuple[int, int]] = []
    errors: list[object] = []

    def report(err: object, msg: object) -> None:
        if err is None:
            acked.append((msg.partition(), msg.offset()))
        else:
            errors.append(err)

    with Clients() as clients:
        producer = clients.producer({"bootstrap.servers": bootstrap, **settings})
        for i, value in enumerate(values):
            producer.produce(topic, value, key=b"%d" % (i % 10), on_delivery=report)
            producer.poll(0)
        assert producer.flush(30) == 0
    assert errors == []
    return acked


def consume(
    bootstrap: str, topic: str, partitions: int, count: int, **settings: object
) -> list[bytes]:
    with Clients() as clients:
        consumer = clients.consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "unused",
                "enable.auto.commit": False,
                **settings,
            }
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        return [m.value() for m in poll_records(consumer, count, 30)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_confluent_round_trip_with_each_codec(broker: BrokerProcess, codec: str) -> None:
    create(broker.bootstrap, "codec", 3)
    values = [b"%s-%05d-" % (codec.encode(), i) + b"x" * 90 for i in range(3000)]
    acked = produce(
        broker.bootstrap, "codec", values, **{"compression.type": codec, "linger.ms": 5}
    )
    assert len(acked) == len(values)
    assert len(set(acked)) == len(acked)
    assert sorted(consume(broker.bootstrap, "codec", 3, len(values))) == sorted(values)


def test_idempotent_acks_all_producer_and_read_committed_consumer(broker: BrokerProcess) -> None:
    create(broker.bootstrap, "idem", 2)
    values = [b"i%05d" % i for i in range(2000)]
    acked = produce(broker.bootstrap, "idem", values, **{"enable.idempotence": True, "acks": "all"})
    for partition in (0, 1):
        offsets = sorted(o for p, o in acked if p == partition)
        assert offsets == list(range(len(offsets)))  # no gaps, no duplicates
    got = consume(broker.bootstrap, "idem", 2, len(values), **{"isolation.level": "read_committed"})
    assert sorted(got) == values


def test_acks_zero_and_one(broker: BrokerProcess) -> None:
    create(broker.bootstrap, "acks")
    produce(broker.bootstrap, "acks", [b"zero-%d" % i for i in range(100)], acks=0)
    produce(broker.bootstrap, "acks", [b"one-%d" % i for i in range(100)], acks=1)
    assert len(consume(broker.bootstrap, "acks", 1, 200)) == 200


def test_unknown_topic_is_not_auto_created_by_default(
    broker: BrokerProcess, kafka_clients: Clients
) -> None:
    conf = {"bootstrap.servers": broker.bootstrap}
    producer = kafka_clients.producer({**conf, "message.timeout.ms": 3000})
    failures: list[object] = []
    producer.produce("missing", b"v", on_delivery=lambda err, _msg: failures.append(err))
    producer.flush(10)
    assert len(failures) == 1 and failures[0] is not None
    assert "missing" not in kafka_clients.admin(conf).list_topics(timeout=10).topics


def test_auto_create_when_enabled(start_broker, kafka_clients: Clients) -> None:
    broker = start_broker("auto.create.topics.enable=true", "num.partitions=2")
    produce(broker.bootstrap, "auto", [b"a", b"b"])
    admin = kafka_clients.admin({"bootstrap.servers": broker.bootstrap})
    assert len(admin.list_topics(timeout=10).topics["auto"].partitions) == 2


def test_admin_create_describe_delete(broker: BrokerProcess, kafka_clients: Clients) -> None:
    admin = kafka_clients.admin({"bootstrap.servers": broker.bootstrap})
    create(broker.bootstrap, "admin", 4, min_insync_replicas="1", cleanup_policy="delete")
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        admin.create_topics([NewTopic("admin", 1, 1)])["admin"].result(10)
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):  # checked first, as Kafka
        admin.create_topics([NewTopic("admin", 1, 3)])["admin"].result(10)
    with pytest.raises(KafkaException, match="INVALID_REPLICATION_FACTOR"):
        admin.create_topics([NewTopic("rf3", 1, 3)])["rf3"].result(10)
    with pytest.raises(KafkaException, match="INVALID_CONFIG"):
        admin.create_topics([NewTopic("bad", 1, 1, config={"segment.bytes": "x"})])["bad"].result(
            10
        )
    resource = ConfigResource("topic", "admin")
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["cleanup.policy"].value == "delete"
    assert configs["segment.bytes"].value == str(1024**3)
    cluster = admin.describe_cluster().result(10)
    assert [n.id for n in cluster.nodes] == [1]
    admin.delete_topics(["admin"])["admin"].result(10)
    assert "admin" not in admin.list_topics(timeout=10).topics


def test_list_offsets_earliest_latest_and_by_time(
    broker: BrokerProcess, kafka_clients: Clients
) -> None:
    create(broker.bootstrap, "times")
    producer = kafka_clients.producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("times", b"t%d" % i, timestamp=1_000_000 + i * 1000)
    producer.flush(10)
    consumer = kafka_clients.consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused"})
    low, high = consumer.get_watermark_offsets(TopicPartition("times", 0), timeout=10)
    assert (low, high) == (0, 10)
    [found] = consumer.offsets_for_times([TopicPartition("times", 0, 1_004_500)], timeout=10)
    assert found.offset == 5
    [beyond] = consumer.offsets_for_times([TopicPartition("times", 0, 9_000_000)], timeout=10)
    assert beyond.offset == -1


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kafka_python_produce_and_consume(broker: BrokerProcess, codec: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition

    create(broker.bootstrap, "kp", 2)
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap, acks="all", compression_type=codec
    ) as producer:
        futures = [producer.send("kp", b"kp-%d" % i, partition=i % 2) for i in range(500)]
        producer.flush(30)
        offsets = sorted((f.get(10).partition, f.get(10).offset) for f in futures)
    assert offsets == sorted([(0, i) for i in range(250)] + [(1, i) for i in range(250)])
    values = []
    with KafkaConsumer(
        bootstrap_servers=broker.bootstrap, enable_auto_commit=False, consumer_timeout_ms=10000
    ) as consumer:
        consumer.assign([KTopicPartition("kp", 0), KTopicPartition("kp", 1)])
        consumer.seek_to_beginning()
        for message in consumer:
            values.append(message.value)
            if len(values) == 500:
                break
    assert sorted(values) == sorted(b"kp-%d" % i for i in range(500))


def test_compacted_topic_read_by_a_real_consumer(start_broker, kafka_clients: Clients) -> None:
    broker = start_broker("log.cleaner.backoff.ms=200")
    create(broker.bootstrap, "compact", 1, cleanup_policy="compact", segment_bytes="2048")
    producer = kafka_clients.producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    expected: dict[bytes, bytes] = {}
    for i in range(300):
        key, value = b"key-%d" % (i % 5), b"value-%03d-" % i + b"c" * 40
        expected[key] = value
        producer.produce("compact", value, key=key)
        producer.flush(10)  # one batch per record, so batches can go
    eventually(
        lambda: "compacted compact-0" in (broker.data_dir / "broker.log").read_text(),
        30,
        interval=0.2,
        what="the broker log says compacted compact-0",
    )
    consumer = kafka_clients.consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused"})
    consumer.assign([TopicPartition("compact", 0, 0)])

    def at_the_end(got: list) -> bool:
        return bool(got) and got[-1].offset() >= 299

    records = poll_records(consumer, 300, 30, until=at_the_end)
    assert records[-1].offset() == 299 and len(records) < 300
    assert {m.key(): m.value() for m in records} == expected
