"""`estimator serve`: a local HTTP API (``/v1/...``) and one web page over the same conversions as the CLI.

A front end beside ``cli/``: a request's fields are the CLI's options, read by the request layer's one definition
of them (`estimator.serve.fields`), turned into reports by the functions the commands call, and written by the render
layer's writers (`estimator.serve.documents`). FastAPI and uvicorn are an extra (``pip install 'llm-estimator[serve]'``)
and load only in `estimator.serve.app`.
"""
