"""What each kind of job records, and the checks everything read back from disk passes.

``run_result`` is one run (its config, environment, status and each variant's
results); ``sweep_record``, ``shape_record``, ``trial_record`` and
``coldstart_record`` are the records of sweeps, shape sweeps, "try it"
comparisons and cold starts, as JSON and CSV text; ``cache_file`` is a cold
start's Mega-Cache file and its header. A record may come from someone else:
``schema`` holds the typed, bounded checks every value read passes, and
``record_load``, ``sweep_load`` and ``trial_load`` read the job records back
with them.
"""
