"""The `imageforge` command: run jobs headless exactly as the add-on does, set up the server, manage models."""
