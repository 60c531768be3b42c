"""What to try: suggestions read from a measured run, and the verdict of trying them.

``advice`` gathers a run's evidence and ranks what its rules suggest;
``advice_rules`` is the rule table (evidence → a suggestion, a configuration
delta or a code change, a source); ``trial_judge`` reads a "try it"
comparison's runs and judges each suggestion; ``what_to_try`` puts the ranked
suggestions beside the verdicts of their trials for the CLI, the report and the
window.
"""
