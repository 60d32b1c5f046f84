"""Records, loaders and hypothesis generation: the first stage of the data flow."""
