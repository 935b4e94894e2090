"""The headless command line (`python -m scheduler_core`, and `servescope` without `serve`): one
parser, and a function per command."""
