"""Golden models (bit-exact integer models and float references) and the network simulator."""
