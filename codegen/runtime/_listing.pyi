# Type-checking bridge, never copied (render copies .py files only): in a generated package
# `_listing.py` is rendered from templates/listing.py.jinja; checking the runtime where it lives
# (codegen/runtime) sees the generated package's registry instead.
from workers_ai._listing import DETAILS as DETAILS
from workers_ai._listing import INPUTS as INPUTS
