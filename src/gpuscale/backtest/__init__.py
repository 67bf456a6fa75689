"""`gpuscale backtest`: a cluster's Prometheus history as the workload, replayed through the
user's manifests, checked against what was recorded, then alternatives on the same traffic.

history.py reads the export (a query_range JSON, OpenMetrics text or promtool's dump) into a
`promql.SeriesStore`; windows.py turns counters and histograms into per-window increases with
Prometheus' reset and gap rules; traffic.py rebuilds a request stream from them; signals.py
reads the same signals (replicas, queue, KV use, latency quantiles, GPUs) from the recorded
store and from a run's own store; agreement.py compares them; section.py says it in lines,
JSON and a chart. Nothing here runs a simulation or prints: the command (cli/backtest.py)
does, through the run path `simulate` and `compare` use.
"""
