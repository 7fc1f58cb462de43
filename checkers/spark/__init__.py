"""Spark plumbing shared by the analyses: the session and the history frames."""
