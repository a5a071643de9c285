"""Pipeline jobs: replay of real data, the local stack, and (later) the PyFlink and batch jobs."""
