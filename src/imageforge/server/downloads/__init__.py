"""Model files on disk: where they live, whether they are ready, and how they are fetched.

store.py (staging, deleting a file to fetch it again; the layout, readiness and verification cache are
contract/model_files.py, shared with the CLI and the add-on) · sources.py (hub, mirror, timeouts, the `downloads`
resource) · fetch.py (streamed, resumable, verified transfer) · size_limit.py (how many bytes one download may
bring) · hub_library.py (huggingface_hub asks the hub what an undeclared file is) · meter.py (progress and speed) ·
failures.py (what each failure means) · install.py (ensure_models: the order of all of the above) ·
job_download.py (a download inside a running job). Reference: docs/models.md.
"""
