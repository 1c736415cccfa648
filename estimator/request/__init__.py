"""Requests: what the CLI, the HTTP API and the Python API ask for, typed once at the door.

`options` defines every option once (field, flags, what it takes, default, help, topic, the commands that take it);
the CLI's typer commands, the `estimate` script's parser and the HTTP API's fields are all derived from it (`words`
reads command lines and query fields by it). `convert` turns the strings of a command line or a query into the typed
requests of `models`; `hardware` and `formats` resolve the cards, servers and number formats a request names;
`estimate` runs one (`training` for ``mode`` train); `plan` and `sweep` convert and run those commands' options;
`listing` gives the catalogs' rows. This layer sits above inference, training, planning and live and below the front
ends (cli, serve): it never imports them, nor render. An error about an input names the request's field
(`estimator.errors.FieldInvalid`, which the layers below raise too, re-exported by `errors`); each front end words
the field its own way (the CLI by its flag).
"""
