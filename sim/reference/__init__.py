"""Float references written from the published equations, independent of the bit-exact models."""
