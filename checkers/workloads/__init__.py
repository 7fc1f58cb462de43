"""Checks of what particular workloads promise beyond the queue model.

``eos``: the consume-transform-produce copier's output equals its input
(``eos-lost``, ``eos-duplicate``); ``group``: consumer groups never move a
committed offset backwards and never give one partition to two members at
once, and members resume where the group committed
(``committed-offset-regression``, ``split-ownership``, ``resume-skip``). Both read the
fields those workloads add to their ops (``output_shift``, ``commit``,
``rebalance_log``), so on any other history they find nothing.
"""
