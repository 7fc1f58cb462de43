"""jepka's checkers: reading histories and judging them with PySpark jobs.

Independent of the rest of jepka: a checker learns only what a client observed.
"""
