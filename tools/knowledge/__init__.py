"""What Warden knows about the field, in tables: cause precedence, the NVIDIA Xid catalogue, DCGM fault fields.

Checks, the built-in model's instructions and the docs read these tables; no check carries its own copy.
"""

__all__: list[str] = []
