"""cocotb testbenches on the exported Verilog (Verilator), and their pytest runners."""
