"""The run store on disk: where runs are kept, their folders and files, written atomically and read back.

The store (``store``) is the folder of saved runs, one sub-folder per run, at
the default place ``locations`` names. A run's files are written by
``run_files`` (``RunWriter``, appending samples as a run goes) from the event
stream the ``recorder`` turns into a ``RunResult``, and read back, every value
checked, by ``run_load``, ``csv_readers`` and ``summary_cache`` (the summary of
runs of older versions, cached outside their folders). Job records live in a
``record_folder`` (``sweep_store`` for sweeps and shape sweeps), owned by a
running job through ``owner_lock``; ``file_io`` holds the atomic writes and the
text of CSV cells and JSON values every writer shares.
"""
