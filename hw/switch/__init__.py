"""Switch-side blocks: the egress congestion point (queue occupancy + WRED/ECN marker)."""
