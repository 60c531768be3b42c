"""A run in words and files for people: numbers as text, terminal-safe output, the turns, the export.

``formatting`` writes numbers as people read them (the terminal table, reports,
the window's table); ``terminal`` makes every control character visible before
text reaches a terminal; ``turns_text`` says in words the turns a run's timed
calls took; ``run_export`` exports a run to a folder (CSVs, JSON and a Markdown
report for an issue tracker).
"""
