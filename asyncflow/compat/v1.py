"""`import asyncflow.compat.v1 as tf`: the same module as `import asyncflow as tf`.

asyncflow's API *is* `tf.compat.v1`, so this name is an alias of the package itself (the module
replaces itself in `sys.modules`), and every attribute, namespace and collection is shared.
"""

import sys

import asyncflow

sys.modules[__name__] = asyncflow
