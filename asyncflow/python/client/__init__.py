"""`asyncflow.python.client`."""
