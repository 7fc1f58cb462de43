"""Faults: pure plans (grudges, node specs, schedules) plus thin appliers.

The runner builds a package with `nemesis.package.build("kill,partition",
seed=..., interval=...)`, runs `package.nemesis.invoke(ctx, op)` for each op
of `package.schedule(duration)`, then `package.final_ops()`, and always heals
through `harness.cluster.Cluster.heal()`.
"""
