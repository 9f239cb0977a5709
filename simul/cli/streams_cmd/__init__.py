"""`simul streams`: build stream files (FLORES, ACL 60/60, recognizer output) and look inside them.

The commands live by what they read: written text (text.py: flores, text), speech (speech.py: acl6060, asr)
and an existing stream file (stream_file.py: stats, show, export); common.py holds the options and output
helpers they share.
"""

from __future__ import annotations

import typer

from simul.cli.aliases import command_class
from simul.cli.streams_cmd import speech, stream_file, text
from simul.cli.streams_cmd.common import (
    OLD_OUTPUT,
    OLD_REFERENCE,
    OLD_SOURCE_FILE,
    OLD_SRC_LANG,
    OLD_TGT_LANG,
)

streams_app = typer.Typer(
    name="streams",
    help="Build stream files (FLORES, ACL 60/60, recognizer partials) and inspect them.",
    no_args_is_help=True,
)

# in the order `simul streams --help` lists them, with the old spellings of their options
for _name, _command, _aliases in (
    ("flores", text.flores_command, (OLD_OUTPUT, OLD_SRC_LANG, OLD_TGT_LANG)),
    ("text", text.text_command, (OLD_OUTPUT, OLD_SOURCE_FILE)),
    ("acl6060", speech.acl6060_command, (OLD_OUTPUT, OLD_TGT_LANG)),
    ("asr", speech.asr_command, (OLD_OUTPUT, OLD_SRC_LANG, OLD_TGT_LANG, OLD_REFERENCE)),
    ("stats", stream_file.stats_command, ()),
    ("show", stream_file.show_command, ()),
    ("export", stream_file.export_command, (OLD_OUTPUT,)),
):
    streams_app.command(_name, cls=command_class(*_aliases))(_command)


def register(app: typer.Typer) -> None:
    app.add_typer(streams_app, name="streams")
