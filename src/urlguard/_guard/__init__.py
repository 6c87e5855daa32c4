"""The decision for one request, sans-IO: what both middlewares share."""
