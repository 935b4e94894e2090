"""What leaves the simulation as a file or a table: Perfetto traces and text reports."""
