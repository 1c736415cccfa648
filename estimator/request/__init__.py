"""Requests: what the CLI, the HTTP API and the Python API ask for, typed once at the door.

`options` defines every option once (name, flags, what it takes, default, help, topic, the commands that take it);
the CLI's typer commands, the `estimate` script's fast parser and the HTTP API's fields are derived from it.
`convert` turns the strings of a command line or a query into the typed requests of `models`; `hardware` and
`formats` resolve the cards, servers and number formats a request names; `estimate` runs one. This layer sits above
inference, training, planning and live and below the front ends (cli, serve): it never imports them, nor render.
Errors about an input name the request's field (`errors.FieldInvalid`); each front end words the field its own way.
"""
