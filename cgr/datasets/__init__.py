"""Getting the public datasets: downloads from their publishers (or a local copy), checked by
sha256 into the data root, and the files cgr derives from them (cgr.data.registry lists them)."""
