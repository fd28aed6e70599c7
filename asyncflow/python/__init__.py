"""`asyncflow.python`: the module paths TF1 programs import after the rename
(`from tensorflow.python.client import timeline`)."""
