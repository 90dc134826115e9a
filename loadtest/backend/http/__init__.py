"""The embedded backend's HTTP side: the WSGI app, its server, the request-head reader, the
short path for JSON-protocol requests and their errors.
"""
