"""Sockets: the asyncio server and per-connection request loop."""
