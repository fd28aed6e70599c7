"""`asyncflow.compat`: `import asyncflow.compat.v1 as tf` for programs written against `tensorflow.compat.v1`."""
