"""How an upscaler runs on an image of any size: seam-free tiles streamed in bands (tiling.py) and the
band-wise high-quality 2× downscale that turns a 4× model's rows into a 2× result (halving.py)."""
