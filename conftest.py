"""ofbench's pytest plugin lives in the harness package (harness/plugin.py)."""
pytest_plugins = ["harness.plugin"]
