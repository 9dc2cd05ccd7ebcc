"""ImageForge's job server: runs in its own Python 3.12 environment and never imports bpy.

BlendJob's runner loads this file by path as the entrypoint `server/__init__.py:server`, under a private
module name. We then import the real package by its name (`imageforge.server`) so that every module
uses ordinary absolute imports, and expose its `server`. The server process creates everything private
(job folders 0700, files 0600) whatever umask it inherited (contract/private_storage.py).
"""

import os
import sys
from pathlib import Path

if __name__ != "imageforge.server":
    _SOURCE_ROOT = str(Path(__file__).resolve().parents[2])
    if _SOURCE_ROOT not in sys.path:
        sys.path.insert(0, _SOURCE_ROOT)
    from imageforge.contract.private_storage import PRIVATE_UMASK

    os.umask(PRIVATE_UMASK)  # before the server creates any folder or file
    from imageforge.server.app import server  # noqa: F401  (the BlendJob entrypoint)
