"""A trained model for people: `cgr explain` (one question, in the terminal) and `cgr serve`."""
