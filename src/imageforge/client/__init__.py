"""The client side of the job server: environment pins, setup, and the connection to a running server.

Used by the add-on (inside Blender) and by the CLI. Imports BlendJob and the standard library only,
never bpy and never the server's heavy packages.
"""
