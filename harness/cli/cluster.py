"""`jepka cluster up|down|status|heal`: clusters on demand, outside a test.

A cluster is named (default: its backend's name) and registered in
`<store>/.faults/<name>.json`, so `down`, `status` and `heal` find it from
any shell; `heal` and `down` without a name act on every registered cluster.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import yaml

from harness.cli import ExitCode, UsageError, describe
from harness.cluster import BACKENDS, DBS, Cluster, ClusterError, ClusterSpec, all_registered


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cluster",
        help="start, inspect, heal or remove a cluster",
        description=describe(__doc__),
    )
    parser.add_argument("action", choices=("up", "down", "status", "heal"))
    parser.add_argument(
        "--cluster",
        choices=BACKENDS,
        default=None,
        help="backend: local (network namespaces), docker, ssh",
    )
    parser.add_argument("--name", help="cluster name (default: the backend's name)")
    parser.add_argument("--store", default="store", help="store directory (default: store)")
    parser.add_argument("--spec", help="cluster spec file (YAML or JSON) with ClusterSpec fields")
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument(
        "--controllers",
        type=int,
        default=0,
        help="controller-only nodes besides the broker nodes (0: every node is both)",
    )
    parser.add_argument("--db", choices=DBS, default="reference")
    parser.add_argument("--bug", action="append", default=[], help="broker bug to enable")
    parser.add_argument("--kafka-home", help="Kafka installation on each node (db kafka)")
    parser.add_argument(
        "--image", help="a local image following apache/kafka's conventions (backend docker)"
    )
    parser.add_argument("--hosts", help="comma-separated SSH hosts (backend ssh)")
    parser.add_argument("--ssh-user", help="login on the hosts (default: the ssh config's, root)")
    parser.add_argument("--ssh-key", help="private key file (default: the ssh config's, agent)")
    parser.add_argument("--ssh-port", type=int, help="sshd port (default: the ssh config's, 22)")
    parser.add_argument("--ssh-config", help="OpenSSH client config (default: ~/.ssh/config)")
    parser.add_argument(
        "--ssh-check-host-keys",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="refuse hosts whose key is not in known_hosts (default: on)",
    )
    parser.add_argument("--json", action="store_true", help="status as one JSON array of clusters")
    parser.add_argument(
        "--build",
        action="store_true",
        help="rebuild the docker node image even if its sources did not change",
    )
    parser.set_defaults(run=run)


def spec_from_args(args: argparse.Namespace) -> ClusterSpec:
    data: dict[str, Any] = {}
    if args.spec:
        try:
            with open(args.spec) as f:
                loaded = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            raise UsageError(f"--spec {args.spec}: {e}") from None
        if not isinstance(loaded, dict):
            raise UsageError(f"--spec {args.spec}: expected a mapping of cluster settings")
        data.update(loaded)
    backend = args.cluster or data.get("backend", "local")
    data.update(backend=backend, name=args.name or data.get("name", backend))
    if not args.spec or args.cluster:
        data.update(nodes=args.nodes, controllers=args.controllers, db=args.db, bugs=args.bug)
        if args.kafka_home:
            data["kafka_home"] = args.kafka_home
        if args.image:
            data["image"] = args.image
        ssh = {
            "ssh_user": args.ssh_user,
            "ssh_key": args.ssh_key,
            "ssh_port": args.ssh_port,
            "ssh_config": args.ssh_config,
            "ssh_check_host_keys": args.ssh_check_host_keys,
        }
        data.update({k: v for k, v in ssh.items() if v is not None})
        if args.hosts:
            data["hosts"] = [h for h in args.hosts.split(",") if h]
            data["nodes"] = len(data["hosts"])
    return ClusterSpec.from_json(data)


def _targets(args: argparse.Namespace) -> list[str]:
    if args.name or args.cluster:
        return [args.name or args.cluster]
    return all_registered(args.store)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except ClusterError as e:
        raise UsageError(str(e)) from None


def _run(args: argparse.Namespace) -> int:
    if args.action == "up":
        cluster = Cluster.up(spec_from_args(args), args.store, build_image=args.build, owned=False)
        spec = cluster.spec
        print(f"cluster {spec.name} up ({spec.backend}); bootstrap: {cluster.bootstrap}")
        return ExitCode.VALID
    names = _targets(args)
    if args.action == "status" and args.json:
        print(json.dumps([_status(Cluster.attach(name, args.store)) for name in names]))
        return ExitCode.VALID
    if not names:
        print("no registered clusters")
        return ExitCode.VALID
    for name in names:
        cluster = Cluster.attach(name, args.store)
        if args.action == "down":
            cluster.down()
            print(f"cluster {name} removed")
        elif args.action == "heal":
            cluster.heal()
            print(f"cluster {name} healed")
        else:
            print(f"cluster {name} ({cluster.spec.backend}); bootstrap: {cluster.bootstrap}")
            for row in cluster.status():
                print("  " + "  ".join(f"{k}={v}" for k, v in row.items()))
    return ExitCode.VALID


def _status(cluster: Cluster) -> dict[str, Any]:
    return {
        "cluster": cluster.spec.name,
        "backend": cluster.spec.backend,
        "nodes": cluster.status(),
    }
