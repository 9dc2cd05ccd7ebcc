"""The steps jobs are made of, one concern per module; server/jobs/ composes them and never imports itself.

progress.py (the bar: stages, cancellation) · model_loading.py (load a job's model, log what ran where) ·
region.py (a box of whole pixels) ·
selection_mask.py (a box or lasso as pixels: crop, confining mask, anti-aliased coverage) · matte.py (a
background model's matte at the analysis size, inside a selection, joined with colour) · geometry_analysis.py
(one MoGe-2 run on a still) · geometry_outputs.py (depth, metadata and normal files for a region) · hole_fill.py
(LaMa on the crop around a hole, the paste back, the clean plate's weight) · frame_loop.py (videos and sequences
frame by frame)
· frame_cache.py (finished frames kept for resume) · steady_edges.py (a clip's matte leaning on the previous
frame's) · debug_report.py (what every debug-* job writes).

Layers: jobs → job_steps → models, inference, media, geometry, downloads, matting → contract
(tests/contract/test_boundaries.py).
"""
