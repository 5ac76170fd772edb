"""NIC-side engines: DCQCN reaction/notification points, CNP generator, rate limiter, LDCP."""
