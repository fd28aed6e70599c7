"""More random ops (multinomial, random_gamma, random_crop, ...)."""

__all__: list[str] = []
