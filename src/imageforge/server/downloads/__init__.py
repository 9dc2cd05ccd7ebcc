"""Model files on disk: where they live, whether they are ready, and how they are fetched."""
