"""The figures of a run: latency statistics, per-variant samples, the summary table and the verdicts.

``stats`` holds the statistics (numpy only), ``samples`` one variant's
per-iteration samples as numpy columns, ``summary`` the summary rows and the
speedup intervals read from them, and ``verdict`` the verdict on each compiled
variant (faster, slower, or cannot tell). ``machine_load`` reads how busy the
machine is before and after a run, for the supervising side only.
"""
