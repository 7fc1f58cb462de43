"""A controller-only node (``process.roles=controller``; Kafka's ``ControllerServer``
in a process of its own): a voter of the metadata quorum running the
``QuorumController``, reached on its controller listener only. It hosts no
partitions and never registers as a broker, so no Metadata response lists it."""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.log.ledger import FsyncLedger
from broker.replication.quorum_node import QuorumNode


class ControllerServer:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.ledger = FsyncLedger(config.data_dir)
        self.quorum = QuorumNode(config, self.ledger)
        own = self.quorum.own
        assert own is not None  # a controller is among the voters (QuorumNode checks)
        self.listen = f"{own.host}:{own.port}"

    async def start(self) -> None:
        await self.quorum.start()

    async def stop(self) -> None:
        await self.quorum.stop()
        self.ledger.close()
