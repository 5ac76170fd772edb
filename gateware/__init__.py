"""Verilog export, lint and synthesis of the hardware tops (generated output: gateware/build/)."""
