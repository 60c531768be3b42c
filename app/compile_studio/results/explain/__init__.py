"""Why a variant is as fast as it is: the diagnostics files, the rule on what bounds eager, and the sentence.

``why_files`` writes the worker's diagnostics into the run folder (why.json,
traces, generated code) and reads them back checked; ``why_rules`` classifies
what bounds eager's calls from figures machine load does not change; ``why``
puts it into the sentence shown by ``show``, the report and the Why tab.
"""
