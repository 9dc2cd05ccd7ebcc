"""Converting a model on the user's machine (DA3 with its camera decoder): the throwaway converter environment,
the exporter subprocess, and the local catalog overlay that registers the result (openspec/0023)."""
