"""pipeproof."""
