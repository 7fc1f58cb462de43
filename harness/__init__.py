"""jepka's harness: the CLI, test runner, generator, history store and cluster backends."""
