"""TensorArray (TF1's TensorArrayV3 family): not provided yet, so `__all__` is empty.

map_fn/scan/foldl/foldr (asyncflow/functional.py) and dynamic_rnn do without it: they read elements
with a gather and append results to loop-carried accumulators. The intended design is TF1's: a
per-step resource holding the elements, a float `flow` tensor that orders the ops and is what a
while_loop carries, and gradient TensorArrays (TensorArrayGradV3) whose writes aggregate.
"""

__all__: list[str] = []
