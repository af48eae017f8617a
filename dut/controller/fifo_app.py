"""FIFO baseline of document 000 (the conventional Ryu controller): each Packet-In is parsed,
searched and answered with a Packet-Out on os-ken's event thread, in arrival order.

Start: ``python -m dut.controller.launcher --app dut.controller.fifo_app --config c.yaml``
(config keys: dut/controller/config.py; worker keys are ignored here).
"""
from dut.controller._app_base import PayloadSearchApp
from dut.controller.engine import FifoEngine


class FifoController(PayloadSearchApp):
    ENGINE = FifoEngine
