"""ofbench's pytest plugin (labgrid-style), loaded by the repo's one-line conftest.py.

Modules, one role each:
  paths      where the repo, its suites and its build live (the one place that says so)
  options    the ``ofbench`` option group (defaults in the help)
  state      RunState: everything one pytest session keeps, in ``config.stash``
  plugin     configure, markers that skip with a reason, parametrisation, session start
  fixtures   the fixture chain profile -> lab -> switch_kind / results / progress, lab_lease
  results    Results: what a suite test records (importable and unit-tested)
  reporting  test outcomes, pytest-html extras, the run index, InfluxDB export, nightly trend
  lease      the run's lab place on labgrid's coordinator (taken at configure, re-checked before
             each measurement with the testbed lock, released at unconfigure), the testbed's
             fingerprint
"""
