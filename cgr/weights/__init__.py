"""How model weights are judged (contents) and loaded (loaders): cgr decides, never the folder."""
