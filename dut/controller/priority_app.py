"""Prioritised controller of document 000: the event thread only classifies by IP precedence
and enqueues; 1 low + N high worker threads search and send (dut/controller/engine.py).

Start: ``python -m dut.controller.launcher --app dut.controller.priority_app --config c.yaml``
"""
from dut.controller._app_base import PayloadSearchApp
from dut.controller.engine import PriorityEngine


class PriorityController(PayloadSearchApp):
    ENGINE = PriorityEngine
