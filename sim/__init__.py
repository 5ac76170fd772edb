"""Golden models (bit-exact integer models and float references) and, later, the network simulator."""
