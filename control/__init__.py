"""Control: where nodes live and how they are driven — cluster backends
(namespaces, containers, SSH hosts), running commands on nodes, network
faults and DB adapters. Below the nemeses, workloads and harness; above
nothing of jepka's."""
