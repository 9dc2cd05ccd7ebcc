"""Render-farm job descriptions for the frame jobs: Open Job Description bundles (Deadline Cloud) and the Flamenco
job type. Standard library only: the CLI and Blender's add-on (Send to Farm…) both write them.

`FarmJob` (farm_job.py) is what both describe: a frame job, its settings, the frame numbers, the chunk size and
the shared folders. `openjd.py` writes the bundle, `flamenco.py` ships `imageforge.js` and the settings a
Flamenco submission carries. Every command they run is an `imageforge` command (docs/farm.md).
"""
