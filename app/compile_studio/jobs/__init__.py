"""Jobs: a run, a sweep, a shape sweep, each driven through the session that supervises its worker."""
