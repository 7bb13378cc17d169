# Type-checking bridge, never copied (render copies .py files only): in a generated package
# `_registry.py` is rendered from templates/registry.py.jinja; checking the runtime where it lives
# (codegen/runtime) sees the generated package's registry instead.
from workers_ai._registry import MODELS as MODELS
